// Records the Vercel AI SDK part of the trace corpus: real `ai` packages, scripted mock models, no network.
//
//   node record.mjs            (Node >= 22; see README.md)
//
// Three telemetry variants x the same scenarios:
//   ai7otel_*    ai 7 + @ai-sdk/otel `OpenTelemetry` integration (GenAI semantic conventions)
//   ai7legacy_*  ai 7 + @ai-sdk/otel `LegacyOpenTelemetry` integration (the `ai.*` span shape)
//   ai6_*        ai 6 built-in `experimental_telemetry` (the `ai.*` span shape)
// The truth files are written from the scenario scripts below (what the mock model was told to request
// and what each tool was made to do), never from the recorded spans.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import * as ai7 from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import * as ai6 from 'ai6';
import { MockLanguageModelV3 } from 'ai6/test';
import { LegacyOpenTelemetry, OpenTelemetry } from '@ai-sdk/otel';
import { Recorder, writeTruth } from './otlp.mjs';

const here = dirname(fileURLToPath(import.meta.url));
// Read installed versions from node_modules (some packages do not export ./package.json).
const versionOf = (pkg) => JSON.parse(readFileSync(join(here, 'node_modules', pkg, 'package.json'), 'utf8')).version;
const VERSIONS = {
  ai7: versionOf('ai'),
  ai6: versionOf('ai6'),
  otel: versionOf('@ai-sdk/otel'),
  sdk: versionOf('@opentelemetry/sdk-trace'),
};

const FUNCTION_ID = 'weather-assistant';
const AGENT_ID = 'weather-agent';
const SYSTEM = 'You are a weather assistant. Use the tools.';

// ---- tools (identical behaviour for both majors) ---------------------------------------------------
const TEMPS = { Paris: 18, London: 14, Tokyo: 22 };
function toolImpls() {
  return {
    getWeather: {
      description: 'Current weather for a city',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        if (city === 'Atlantis') throw new Error(`weather service has no station in ${city}`);
        return { city, tempC: TEMPS[city] ?? 20, sky: 'clear' };
      },
    },
    convertTemperature: {
      description: 'Convert Celsius to Fahrenheit',
      inputSchema: z.object({ celsius: z.number() }),
      execute: async ({ celsius }) => ({ fahrenheit: Math.round((celsius * 9) / 5 + 32) }),
    },
  };
}

// ---- scenarios --------------------------------------------------------------------------------------
// steps: what the mock model returns on each call; a step is either a list of tool calls or final text.
// status/expected: what the script knows will happen to each requested call.
const SCENARIOS = [
  {
    name: 'single_tool',
    prompt: 'What is the weather in Paris?',
    steps: [[{ name: 'getWeather', args: { city: 'Paris' } }], 'It is 18°C and clear in Paris.'],
  },
  {
    name: 'multi_step',
    prompt: 'What is the weather in Paris, in Fahrenheit?',
    steps: [
      [{ name: 'getWeather', args: { city: 'Paris' } }],
      [{ name: 'convertTemperature', args: { celsius: 18 } }],
      'It is 64°F and clear in Paris.',
    ],
  },
  {
    name: 'parallel',
    prompt: 'Compare the weather in Paris, London and Tokyo.',
    steps: [
      [
        { name: 'getWeather', args: { city: 'Paris' } },
        { name: 'getWeather', args: { city: 'London' } },
        { name: 'getWeather', args: { city: 'Tokyo' } },
      ],
      'Tokyo is warmest (22°C), then Paris (18°C), then London (14°C).',
    ],
  },
  {
    name: 'tool_error',
    prompt: 'What is the weather in Atlantis?',
    steps: [
      [{ name: 'getWeather', args: { city: 'Atlantis' }, status: 'error' }],
      'Sorry, I could not get the weather for Atlantis.',
    ],
    notes: 'getWeather throws for Atlantis; the SDK turns the exception into a tool-error result and loops.',
  },
  {
    name: 'invalid_tool',
    prompt: 'Book me a flight to Tokyo and tell me the weather there.',
    steps: [
      [{ name: 'bookFlight', args: { destination: 'Tokyo' }, status: 'error' }],
      [{ name: 'getWeather', args: { city: 42 }, status: 'error' }],
      [{ name: 'getWeather', args: { city: 'Tokyo' } }],
      'I cannot book flights, but it is 22°C and clear in Tokyo.',
    ],
    notes:
      'Step 1 requests an unknown tool (bookFlight, NoSuchToolError); step 2 calls getWeather with arguments ' +
      'that fail schema validation ({"city": 42}, InvalidToolInputError). Neither tool runs; the SDK records ' +
      'tool-error results and loops. Step 3 is a valid call.',
  },
  {
    name: 'stream_multi_step',
    mode: 'stream',
    prompt: 'What is the weather in Paris, in Fahrenheit?',
    steps: [
      [{ name: 'getWeather', args: { city: 'Paris' } }],
      [{ name: 'convertTemperature', args: { celsius: 18 } }],
      'It is 64°F and clear in Paris.',
    ],
    notes: 'streamText instead of generateText (the mock serves doStream).',
  },
  {
    name: 'agent_multi_step',
    mode: 'agent',
    prompt: 'What is the weather in Paris, in Fahrenheit?',
    steps: [
      [{ name: 'getWeather', args: { city: 'Paris' } }],
      [{ name: 'convertTemperature', args: { celsius: 18 } }],
      'It is 64°F and clear in Paris.',
    ],
    notes:
      'ToolLoopAgent({id: "weather-agent", instructions, tools, stopWhen}).generate({prompt}) with telemetry ' +
      'but NO functionId; truth agent_name is the agent id, whether or not the trace carries it.',
  },
  {
    name: 'no_tool',
    prompt: 'Say hello.',
    steps: ['Hello! Ask me about the weather anywhere.'],
  },
  {
    name: 'content_off',
    prompt: 'What is the weather in Paris, in Fahrenheit?',
    contentOff: true,
    steps: [
      [{ name: 'getWeather', args: { city: 'Paris' } }],
      [{ name: 'convertTemperature', args: { celsius: 18 } }],
      'It is 64°F and clear in Paris.',
    ],
    notes: 'recordInputs=false and recordOutputs=false: prompts, arguments, results and texts are not recorded.',
  },
];

const USAGE = {
  inputTokens: { total: 40, noCache: 40, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 12, text: 12, reasoning: 0 },
};

// Scripted model responses; tool-call ids are fixed so they can be matched across spans.
function modelResults(scenario) {
  let n = 0;
  return scenario.steps.map((step, i) => {
    if (typeof step === 'string') {
      return {
        content: [{ type: 'text', text: step }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: USAGE,
        response: { id: `resp-${scenario.name}-${i}`, modelId: 'mock-model-1', timestamp: new Date(0) },
        warnings: [],
      };
    }
    return {
      content: step.map((call) => ({
        type: 'tool-call',
        toolCallId: `call_${++n}`,
        toolName: call.name,
        input: JSON.stringify(call.args),
      })),
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage: USAGE,
      response: { id: `resp-${scenario.name}-${i}`, modelId: 'mock-model-1', timestamp: new Date(0) },
      warnings: [],
    };
  });
}

function truthFor(scenario, variant, finalOutput) {
  let n = 0;
  const calls = [];
  for (const step of scenario.steps) {
    if (typeof step === 'string') continue;
    for (const call of step) {
      n += 1;
      calls.push({
        name: call.name,
        arguments: call.args,
        status: call.status ?? 'ok',
        kind: 'tool',
        call_id: `call_${n}`,
      });
    }
  }
  const finalText = scenario.steps[scenario.steps.length - 1];
  if (finalOutput !== finalText) throw new Error(`${scenario.name}: final text ${finalOutput} != ${finalText}`);
  return {
    framework: 'vercel-ai',
    instrumentation: variant.instrumentation,
    versions: variant.versions,
    content_capture: !scenario.contentOff,
    scenario: `${variant.prefix}_${scenario.name}`,
    runs: [
      {
        // generateText has no agent object; the functionId is the run's only name (see notes).
        agent_name: scenario.mode === 'agent' ? AGENT_ID : FUNCTION_ID,
        user_query: scenario.prompt,
        final_output: finalText,
        parent_agent: null,
        available_tools: Object.keys(toolImpls()),
        tool_calls: calls,
      },
    ],
    notes: [
      scenario.mode === 'agent'
        ? 'ToolLoopAgent with a scripted mock model, stopWhen stepCountIs(5).'
        : `${scenario.mode === 'stream' ? 'streamText' : 'generateText'} with a scripted mock model, ` +
          `functionId "${FUNCTION_ID}", stopWhen stepCountIs(5).`,
      'Tool-call ids (call_id) are the mock model\'s, fixed by the script.',
      variant.notes,
      scenario.notes ?? '',
    ]
      .filter(Boolean)
      .join(' '),
  };
}

// ---- variants ---------------------------------------------------------------------------------------
const rec = new Recorder('corpus-vercel-ai');

/** Same scripted steps as modelResults, as the stream parts a provider's doStream yields. */
function streamResults(scenario) {
  return modelResults(scenario).map((r) => {
    const parts = [{ type: 'stream-start', warnings: [] }, { type: 'response-metadata', ...r.response }];
    for (const c of r.content) {
      if (c.type === 'text') {
        parts.push({ type: 'text-start', id: 't0' }, { type: 'text-delta', id: 't0', delta: c.text }, { type: 'text-end', id: 't0' });
      } else {
        parts.push(c);
      }
    }
    parts.push({ type: 'finish', finishReason: r.finishReason, usage: r.usage });
    return {
      stream: new ReadableStream({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          controller.close();
        },
      }),
    };
  });
}

/**
 * One run through `sdk` (ai 7 or ai 6): generateText, streamText or a ToolLoopAgent, with the telemetry
 * settings under `telemetryKey` (`telemetry` in ai 7, `experimental_telemetry` in ai 6).
 */
async function runScenario(sdk, MockModel, scenario, telemetryKey, telemetry) {
  const tools = Object.fromEntries(Object.entries(toolImpls()).map(([k, v]) => [k, sdk.tool(v)]));
  const mode = scenario.mode ?? 'generate';
  const model = new MockModel({
    provider: 'mock-provider',
    modelId: 'mock-model-1',
    ...(mode === 'stream' ? { doStream: streamResults(scenario) } : { doGenerate: modelResults(scenario) }),
  });
  const tel = {
    isEnabled: true,
    // The agent scenario sets no functionId, to show what the agent id alone produces.
    ...(mode === 'agent' ? {} : { functionId: FUNCTION_ID }),
    recordInputs: !scenario.contentOff,
    recordOutputs: !scenario.contentOff,
    ...telemetry,
  };
  const common = { model, tools, stopWhen: sdk.stepCountIs(5), [telemetryKey]: tel };
  if (mode === 'agent') {
    const agent = new sdk.ToolLoopAgent({ id: AGENT_ID, instructions: SYSTEM, ...common });
    return agent.generate({ prompt: scenario.prompt });
  }
  if (mode === 'stream') {
    const result = sdk.streamText({ system: SYSTEM, prompt: scenario.prompt, ...common });
    return { text: await result.text, steps: await result.steps };
  }
  return sdk.generateText({ system: SYSTEM, prompt: scenario.prompt, ...common });
}

const VARIANTS = [
  {
    prefix: 'ai7otel',
    instrumentation: '@ai-sdk/otel OpenTelemetry (GenAI semconv) via generateText telemetry',
    versions: { ai: VERSIONS.ai7, '@ai-sdk/otel': VERSIONS.otel, '@opentelemetry/sdk-trace': VERSIONS.sdk },
    notes:
      'ai 7 + @ai-sdk/otel OpenTelemetry integration passed per call in telemetry.integrations. ' +
      'functionId is emitted as gen_ai.agent.name on the invoke_agent root (the root span NAME is the model id).',
    run: (scenario) =>
      runScenario(ai7, MockLanguageModelV4, scenario, 'telemetry', {
        integrations: [new OpenTelemetry({ tracer: rec.tracer('ai') })],
      }),
  },
  {
    prefix: 'ai7legacy',
    instrumentation: '@ai-sdk/otel LegacyOpenTelemetry (ai.* spans) via generateText telemetry',
    versions: { ai: VERSIONS.ai7, '@ai-sdk/otel': VERSIONS.otel, '@opentelemetry/sdk-trace': VERSIONS.sdk },
    notes:
      'ai 7 + @ai-sdk/otel LegacyOpenTelemetry integration passed per call in telemetry.integrations. ' +
      'functionId is emitted as ai.telemetry.functionId / resource.name on every span.',
    run: (scenario) =>
      runScenario(ai7, MockLanguageModelV4, scenario, 'telemetry', {
        integrations: [new LegacyOpenTelemetry({ tracer: rec.tracer('ai') })],
      }),
  },
  {
    prefix: 'ai6',
    instrumentation: 'ai experimental_telemetry',
    versions: { ai: VERSIONS.ai6, '@opentelemetry/sdk-trace': VERSIONS.sdk },
    notes:
      'ai 6 built-in experimental_telemetry with an explicit tracer. ' +
      'functionId is emitted as ai.telemetry.functionId / resource.name on every span.',
    run: (scenario) =>
      runScenario(ai6, MockLanguageModelV3, scenario, 'experimental_telemetry', { tracer: rec.tracer('ai') }),
  },
];

for (const variant of VARIANTS) {
  for (const scenario of SCENARIOS) {
    const stem = join(here, `${variant.prefix}_${scenario.name}`);
    const result = await variant.run(scenario);
    const truth = truthFor(scenario, variant, result.text);
    if (result.steps.length !== scenario.steps.length) {
      throw new Error(`${truth.scenario}: ${result.steps.length} steps, scripted ${scenario.steps.length}`);
    }
    const count = await rec.write(stem);
    writeTruth(stem, truth);
    console.log(`${truth.scenario}: ${count} spans, ${truth.runs[0].tool_calls.length} calls`);
  }
}
