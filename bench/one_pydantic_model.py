"""One pydantic model, defined as the package's are (validators deferred): the import-time floor of
any module that defines a pydantic model (``bench/import_time.py``)."""

from pydantic import BaseModel, ConfigDict


class OneModel(BaseModel):
    model_config = ConfigDict(defer_build=True)

    name: str = ""
