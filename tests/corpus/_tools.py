"""Plain tool functions shared by the agent-framework corpus generators (standard library only).

Each generator wraps them with its framework's own tool decorator (smolagents ``tool(fn)``, CrewAI
``tool("name")(fn)``, LlamaIndex ``FunctionAgent(tools=[fn])``). Google-style docstrings with an
``Args:`` section, which smolagents requires and the others read as the description.
"""

from __future__ import annotations

import time

WEATHER = {"Paris": "18C, cloudy", "Tokyo": "25C, sunny"}
#: the first-listed call of the parallel scenarios (Paris) is slowed down so that it ends last
PARIS_DELAY_S = 0.05


def get_weather(city: str) -> str:
    """Return the current weather for a city.

    Args:
        city: The city name.
    """
    if city == "Paris":
        time.sleep(PARIS_DELAY_S)
    return WEATHER[city]


def search_flights(origin: str, destination: str) -> str:
    """Search flights between two cities.

    Args:
        origin: Departure city.
        destination: Arrival city.
    """
    return f"Flights {origin}->{destination}: AF123 08:00, AF456 12:00"


def book_flight(flight_id: str) -> str:
    """Book a flight by id.

    Args:
        flight_id: The flight to book.
    """
    return f"Booked {flight_id}, confirmation ZX9"


def get_stock_price(symbol: str) -> str:
    """Return the latest stock price for a ticker symbol.

    Args:
        symbol: The ticker symbol.
    """
    raise RuntimeError(f"quote service unavailable for {symbol}")
