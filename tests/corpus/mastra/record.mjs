// Records the Mastra part of the trace corpus: real @mastra/core + @mastra/observability +
// @mastra/otel-exporter, scripted mock models (MockLanguageModelV4 from `ai/test`), no network.
//
//   node record.mjs            (Node >= 22.13; see README.md)
//
// Mastra's OtelExporter is pointed at a tiny OTLP/HTTP JSON receiver on 127.0.0.1 (receiver.mjs), so
// the files hold exactly the request bodies the real exporter sends (one line per POST).
// The truth files are written from the scenario scripts below, never from the recorded spans.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { createTool } from '@mastra/core/tools';
import { createStep, createWorkflow } from '@mastra/core/workflows';
import { Observability } from '@mastra/observability';
import { OtelExporter } from '@mastra/otel-exporter';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { startReceiver } from './receiver.mjs';
import { forecastWorkflow, scriptedModel, weatherTool } from './recording_parts.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const versionOf = (pkg) => JSON.parse(readFileSync(join(here, 'node_modules', pkg, 'package.json'), 'utf8')).version;
const VERSIONS = Object.fromEntries(
  ['@mastra/core', '@mastra/observability', '@mastra/otel-exporter', '@opentelemetry/exporter-trace-otlp-http', 'ai'].map(
    (p) => [p, versionOf(p)],
  ),
);

// ---- tools ------------------------------------------------------------------------------------------
const getWeather = weatherTool({ createTool, z });
const getAccountBalance = createTool({
  id: 'getAccountBalance',
  description: 'Balance of a customer account',
  inputSchema: z.object({ accountId: z.string(), token: z.string() }),
  execute: async ({ accountId }) => ({ accountId, balance: 1250.5, currency: 'EUR' }),
});
const convertTemperature = createTool({
  id: 'convertTemperature',
  description: 'Convert Celsius to Fahrenheit',
  inputSchema: z.object({ celsius: z.number() }),
  execute: async ({ celsius }) => ({ fahrenheit: Math.round((celsius * 9) / 5 + 32) }),
});

// A two-step workflow: step 1 is the getWeather TOOL used as a workflow step, step 2 formats the result.
const forecast = () =>
  forecastWorkflow({ createStep, createWorkflow, z }, { id: 'forecastWorkflow', first: createStep(getWeather), formatId: 'formatForecast' });

// ---- scenarios --------------------------------------------------------------------------------------
// Each agent spec: name, tools, script (model steps). A call: {id, name, args, status?, kind?, inner?};
// `inner` lists the tool calls the call runs itself (a workflow's tool steps), listed right after it.
const WEATHER_INSTRUCTIONS = 'You are a weather assistant. Use the tools.';
const SCENARIOS = [
  {
    name: 'single_tool',
    prompt: 'What is the weather in Paris?',
    agent: {
      name: 'weatherAgent',
      tools: { getWeather, convertTemperature },
      steps: [[{ id: 'call_1', name: 'getWeather', args: { city: 'Paris' } }], 'It is 18°C and clear in Paris.'],
    },
  },
  {
    name: 'multi_step',
    prompt: 'What is the weather in Paris, in Fahrenheit?',
    agent: {
      name: 'weatherAgent',
      tools: { getWeather, convertTemperature },
      steps: [
        [{ id: 'call_1', name: 'getWeather', args: { city: 'Paris' } }],
        [{ id: 'call_2', name: 'convertTemperature', args: { celsius: 18 } }],
        'It is 64°F and clear in Paris.',
      ],
    },
  },
  {
    name: 'parallel',
    prompt: 'Compare the weather in Paris, London and Tokyo.',
    agent: {
      name: 'weatherAgent',
      tools: { getWeather, convertTemperature },
      steps: [
        [
          { id: 'call_1', name: 'getWeather', args: { city: 'Paris' } },
          { id: 'call_2', name: 'getWeather', args: { city: 'London' } },
          { id: 'call_3', name: 'getWeather', args: { city: 'Tokyo' } },
        ],
        'Tokyo is warmest (22°C), then Paris (18°C), then London (14°C).',
      ],
    },
  },
  {
    name: 'tool_error',
    prompt: 'What is the weather in Atlantis?',
    agent: {
      name: 'weatherAgent',
      tools: { getWeather, convertTemperature },
      steps: [
        [{ id: 'call_1', name: 'getWeather', args: { city: 'Atlantis' }, status: 'error' }],
        'Sorry, I could not get the weather for Atlantis.',
      ],
    },
    notes: 'getWeather throws for Atlantis.',
  },
  {
    name: 'invalid_tool',
    prompt: 'Book me a flight to Tokyo and tell me the weather there.',
    agent: {
      name: 'weatherAgent',
      tools: { getWeather, convertTemperature },
      steps: [
        [{ id: 'call_1', name: 'bookFlight', args: { destination: 'Tokyo' }, status: 'error' }],
        [{ id: 'call_2', name: 'getWeather', args: { city: 42 }, status: 'error' }],
        [{ id: 'call_3', name: 'getWeather', args: { city: 'Tokyo' } }],
        'I cannot book flights, but it is 22°C and clear in Tokyo.',
      ],
    },
    notes:
      'Step 1 requests an unknown tool (bookFlight); step 2 calls getWeather with arguments that fail schema ' +
      'validation ({"city": 42}); neither runs the tool. Step 3 is a valid call.',
  },
  {
    name: 'sub_agent',
    prompt: 'I am flying to Paris tomorrow. What should I pack?',
    agent: {
      name: 'travelAgent',
      instructions: 'You are a travel assistant. Ask the weather agent about the weather.',
      tools: { convertTemperature },
      subAgents: ['weatherAgent'],
      steps: [
        [{ id: 'call_1', name: 'agent-weatherAgent', args: { prompt: 'What is the weather in Paris?' } }],
        'Paris is 18°C and clear: pack light layers.',
      ],
    },
    subAgents: {
      weatherAgent: {
        name: 'weatherAgent',
        description: 'Knows the current weather anywhere',
        tools: { getWeather },
        steps: [[{ id: 'sub_call_1', name: 'getWeather', args: { city: 'Paris' } }], 'It is 18°C and clear in Paris.'],
      },
    },
    notes:
      'travelAgent delegates to the sub-agent weatherAgent, which Mastra exposes to the model as the tool ' +
      '"agent-weatherAgent" with arguments {prompt}. The sub-agent run (its own invoke_agent span) is nested ' +
      'inside the supervisor\'s execute_tool span in the same trace. The delegation call is listed with kind ' +
      '"tool" because the model requested it from its tool list.',
  },
  {
    name: 'workflow_tool',
    prompt: 'Give me the forecast for Paris.',
    agent: {
      name: 'plannerAgent',
      instructions: 'You are a planner. Use the forecast workflow.',
      tools: {},
      workflows: ['forecastWorkflow'],
      steps: [
        [
          {
            id: 'call_1',
            name: 'workflow-forecastWorkflow',
            args: { inputData: { city: 'Paris' } },
            kind: 'framework',
            inner: [{ name: 'getWeather', args: { city: 'Paris' } }],
          },
        ],
        'Forecast: Paris: 18°C, clear.',
      ],
    },
    notes:
      'plannerAgent has no plain tools, only the workflow forecastWorkflow, which Mastra exposes to the model as ' +
      'the tool "workflow-forecastWorkflow" with arguments {inputData}. The workflow runs the getWeather tool ' +
      'as its first STEP (createStep(tool)): a call of getWeather nested in the workflow call (issue 12, point 4), ' +
      'which is kind "framework" (the steps are the work). It appears only as a workflow_step span (no ' +
      'execute_tool span, no call id). The second step, formatForecast, is a plain function step, not a tool, ' +
      'so it is not listed. Workflows are not agent runs, so there is one run.',
  },
  {
    name: 'stream_multi_step',
    method: 'stream',
    prompt: 'What is the weather in Paris, in Fahrenheit?',
    agent: {
      name: 'weatherAgent',
      tools: { getWeather, convertTemperature },
      steps: [
        [{ id: 'call_1', name: 'getWeather', args: { city: 'Paris' } }],
        [{ id: 'call_2', name: 'convertTemperature', args: { celsius: 18 } }],
        'It is 64°F and clear in Paris.',
      ],
    },
    notes: 'Same as multi_step but through Agent.stream() (the mock serves doStream).',
  },
  {
    name: 'redacted_args',
    prompt: 'What is the balance of account acc-42? My token is tok-123.',
    agent: {
      name: 'bankAgent',
      instructions: 'You are a banking assistant.',
      tools: { getAccountBalance },
      steps: [
        [{ id: 'call_1', name: 'getAccountBalance', args: { accountId: 'acc-42', token: 'tok-123' } }],
        'Account acc-42 holds 1250.50 EUR.',
      ],
    },
    notes:
      'The argument key "token" matches the default SensitiveDataFilter, so the trace shows "[REDACTED]" ' +
      'where the truth has the real value.',
  },
  {
    name: 'no_tool',
    prompt: 'Say hello.',
    agent: {
      name: 'weatherAgent',
      tools: { getWeather, convertTemperature },
      steps: ['Hello! Ask me about the weather anywhere.'],
    },
  },
];

function buildAgent(spec, label, subAgents = {}) {
  return new Agent({
    id: spec.name,
    name: spec.name,
    description: spec.description,
    instructions: spec.instructions ?? WEATHER_INSTRUCTIONS,
    model: scriptedModel(MockLanguageModelV4, label, spec.steps),
    tools: spec.tools,
    ...(Object.keys(subAgents).length ? { agents: subAgents } : {}),
    ...(spec.workflows ? { workflows: { forecastWorkflow: forecast() } } : {}),
  });
}

function runTruth(spec, { userQuery, parent }) {
  const calls = spec.steps
    .filter((s) => typeof s !== 'string')
    .flat()
    .flatMap((c) => [c, ...(c.inner ?? [])])
    .map((c) => ({ name: c.name, arguments: c.args, status: c.status ?? 'ok', kind: c.kind ?? 'tool', call_id: c.id ?? null }));
  const finalText = spec.steps[spec.steps.length - 1];
  return {
    agent_name: spec.name,
    user_query: userQuery,
    final_output: finalText,
    parent_agent: parent,
    available_tools: [
      ...Object.keys(spec.tools),
      ...(spec.subAgents ?? []).map((n) => `agent-${n}`),
      ...(spec.workflows ?? []).map((n) => `workflow-${n}`),
    ],
    tool_calls: calls,
  };
}

// ---- record -----------------------------------------------------------------------------------------
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rx = await startReceiver();

// `node record.mjs [scenario ...]` records the named scenarios only (all of them by default).
const wanted = process.argv.slice(2);
const unknown = wanted.filter((n) => !SCENARIOS.some((s) => s.name === n));
if (unknown.length) throw new Error(`unknown scenario(s): ${unknown.join(', ')}`);

for (const scenario of SCENARIOS.filter((s) => !wanted.length || wanted.includes(s.name))) {
  const exporter = new OtelExporter({ provider: { custom: { endpoint: rx.endpoint, protocol: 'http/json' } } });
  const subAgents = Object.fromEntries(
    Object.entries(scenario.subAgents ?? {}).map(([key, spec]) => [key, buildAgent(spec, `${scenario.name}-${key}`)]),
  );
  const main = buildAgent(scenario.agent, scenario.name, subAgents);
  const mastra = new Mastra({
    agents: { [scenario.agent.name]: main, ...subAgents },
    logger: false,
    observability: new Observability({
      configs: { otel: { serviceName: 'corpus-mastra', exporters: [exporter] } },
    }),
  });
  const agent = mastra.getAgent(scenario.agent.name);
  let result;
  if (scenario.method === 'stream') {
    const output = await agent.stream(scenario.prompt);
    result = { text: await output.text };
  } else {
    result = await agent.generate(scenario.prompt);
  }
  const expected = scenario.agent.steps[scenario.agent.steps.length - 1];
  if (result.text !== expected) throw new Error(`${scenario.name}: final text ${JSON.stringify(result.text)}`);

  // Span-ended events reach the exporter asynchronously; flush until nothing new arrives.
  const bodies = [];
  for (let quiet = 0; quiet < 3; ) {
    await sleep(150);
    await exporter.flush();
    const got = rx.take();
    bodies.push(...got);
    quiet = got.length ? 0 : quiet + 1;
  }
  await exporter.shutdown();
  const logs = rx.takeLogs();
  if (!bodies.length) throw new Error(`${scenario.name}: no spans received`);
  const stem = join(here, scenario.name);
  writeFileSync(`${stem}.traces.jsonl`, bodies.map((b) => JSON.stringify(b)).join('\n') + '\n');
  if (logs.length) writeFileSync(`${stem}.logs.jsonl`, logs.map((b) => JSON.stringify(b)).join('\n') + '\n');

  const runs = [runTruth(scenario.agent, { userQuery: scenario.prompt, parent: null })];
  for (const [key, spec] of Object.entries(scenario.subAgents ?? {})) {
    const call = scenario.agent.steps.flat().find((c) => c.name === `agent-${key}`);
    runs.push(runTruth(spec, { userQuery: call.args.prompt, parent: scenario.agent.name }));
  }
  const truth = {
    framework: 'mastra',
    instrumentation: '@mastra/otel-exporter (OTLP/HTTP JSON)',
    versions: VERSIONS,
    content_capture: true,
    scenario: scenario.name,
    runs,
    notes: [
      `Agent.${scenario.method ?? 'generate'}() with a scripted MockLanguageModelV4; Observability with only the OtelExporter ` +
        '(custom provider, http/json) and its default SensitiveDataFilter. Agent id = name. ' +
        'Tool-call ids (call_id) are the mock model\'s, fixed by the script.',
      scenario.notes ?? '',
    ]
      .filter(Boolean)
      .join(' '),
  };
  writeFileSync(`${stem}.truth.json`, JSON.stringify(truth, null, 2) + '\n');
  const spans = bodies.flatMap((b) => b.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))).length;
  console.log(`${scenario.name}: ${bodies.length} request(s), ${spans} spans, ${logs.length} log request(s)`);
}
await rx.close();
if (rx.others.length) console.log('other requests:', [...new Set(rx.others)]);
