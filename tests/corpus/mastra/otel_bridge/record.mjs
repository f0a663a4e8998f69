// Records tests/corpus/mastra/otel_bridge: real @mastra/core + @mastra/observability + @mastra/otel-bridge,
// scripted mock models (MockLanguageModelV4 from `ai/test`), no network.
//
//   node record.mjs [scenario ...]        (Node >= 22.13; see ../README.md, "Under @mastra/otel-bridge")
//
// The bridge makes native OTel spans through the application's own OTel JS SDK: here a
// NodeTracerProvider (registered globally, AsyncLocalStorage context) whose BatchSpanProcessor sends
// OTLP/HTTP JSON to a tiny receiver on 127.0.0.1 (../receiver.mjs), so each line of
// `<scenario>.traces.jsonl` is exactly one request body the real OTel exporter POSTed.
// The truth files are written from the scenario scripts below, never from the recorded spans.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { createTool } from '@mastra/core/tools';
import { createStep, createWorkflow } from '@mastra/core/workflows';
import { Observability } from '@mastra/observability';
import { OtelBridge } from '@mastra/otel-bridge';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { startReceiver } from '../receiver.mjs';
import { TEMPS, forecastWorkflow, scriptedModel, weatherTool } from '../recording_parts.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const versionOf = (pkg) => JSON.parse(readFileSync(join(here, 'node_modules', pkg, 'package.json'), 'utf8')).version;
const VERSIONS = Object.fromEntries(
  [
    '@mastra/core', '@mastra/observability', '@mastra/otel-bridge', '@mastra/otel-exporter',
    '@opentelemetry/sdk-trace-node', '@opentelemetry/exporter-trace-otlp-http', 'ai',
  ].map((p) => [p, versionOf(p)]),
);

// ---- tools and the workflow -------------------------------------------------------------------------
const getWeather = weatherTool({ createTool, z });

// The workflow as Mastra's own templates build it: two function steps (no tool used as a step). The agent
// sees it as the tool "workflow-weatherWorkflow".
function weatherWorkflow() {
  const fetchWeather = createStep({
    id: 'fetch-weather',
    description: 'Fetches the weather for a city',
    inputSchema: z.object({ city: z.string() }),
    outputSchema: z.object({ city: z.string(), tempC: z.number(), sky: z.string() }),
    execute: async ({ inputData }) => ({ city: inputData.city, tempC: TEMPS[inputData.city] ?? 20, sky: 'clear' }),
  });
  return forecastWorkflow({ createStep, createWorkflow, z }, { id: 'weather-workflow', first: fetchWeather, formatId: 'format-forecast' });
}

// ---- scenarios --------------------------------------------------------------------------------------
const SCENARIOS = [
  {
    name: 'single_tool',
    prompt: 'What is the weather in Paris?',
    agent: {
      name: 'weatherAgent',
      tools: { getWeather },
      steps: [[{ id: 'call_1', name: 'getWeather', args: { city: 'Paris' } }], 'It is 18°C and clear in Paris.'],
    },
  },
  {
    name: 'multi_step',
    prompt: 'What is the weather in Paris, and then in Tokyo?',
    agent: {
      name: 'weatherAgent',
      tools: { getWeather },
      steps: [
        [{ id: 'call_1', name: 'getWeather', args: { city: 'Paris' } }],
        [{ id: 'call_2', name: 'getWeather', args: { city: 'Tokyo' } }],
        'Paris is 18°C and clear; Tokyo is 22°C and clear.',
      ],
    },
    notes: 'Two model steps under one model_generation span (named `chat mock-model-1` by the bridge).',
  },
  {
    name: 'workflow_tool',
    prompt: 'Give me the forecast for Paris.',
    agent: {
      name: 'plannerAgent',
      instructions: 'You are a planner. Use the weather workflow.',
      tools: {},
      workflows: { weatherWorkflow: weatherWorkflow() },
      steps: [
        [{ id: 'call_1', name: 'workflow-weatherWorkflow', args: { inputData: { city: 'Paris' } } }],
        'Forecast: Paris: 18°C, clear.',
      ],
    },
    notes:
      'plannerAgent has no plain tools, only the workflow weather-workflow (registered as weatherWorkflow), which ' +
      'Mastra exposes to the model as the tool "workflow-weatherWorkflow" with arguments {inputData}. Its two ' +
      'steps (fetch-weather, format-forecast) are function steps, not tools: the one call the agent made is the ' +
      'workflow tool. Workflows are not agent runs, so there is one run.',
  },
];

// ---- record -----------------------------------------------------------------------------------------
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rx = await startReceiver();
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'corpus-mastra-bridge' }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${rx.endpoint}/v1/traces` }))],
});
provider.register();

const wanted = process.argv.slice(2);
const unknown = wanted.filter((n) => !SCENARIOS.some((s) => s.name === n));
if (unknown.length) throw new Error(`unknown scenario(s): ${unknown.join(', ')}`);

for (const scenario of SCENARIOS.filter((s) => !wanted.length || wanted.includes(s.name))) {
  const spec = scenario.agent;
  const agent = new Agent({
    id: spec.name,
    name: spec.name,
    instructions: spec.instructions ?? 'You are a weather assistant. Use the tools.',
    model: scriptedModel(MockLanguageModelV4, scenario.name, spec.steps),
    tools: spec.tools,
    ...(spec.workflows ? { workflows: spec.workflows } : {}),
  });
  const bridge = new OtelBridge();
  const mastra = new Mastra({
    agents: { [spec.name]: agent },
    logger: false,
    observability: new Observability({ configs: { default: { serviceName: 'corpus-mastra-bridge', bridge } } }),
  });
  const result = await mastra.getAgent(spec.name).generate(scenario.prompt);
  const expected = spec.steps[spec.steps.length - 1];
  if (result.text !== expected) throw new Error(`${scenario.name}: final text ${JSON.stringify(result.text)}`);

  const bodies = [];
  for (let quiet = 0; quiet < 3; ) {
    await sleep(150);
    await bridge.flush();
    await provider.forceFlush();
    const got = rx.take();
    bodies.push(...got);
    quiet = got.length ? 0 : quiet + 1;
  }
  if (!bodies.length) throw new Error(`${scenario.name}: no spans received`);
  const stem = join(here, scenario.name);
  writeFileSync(`${stem}.traces.jsonl`, bodies.map((b) => JSON.stringify(b)).join('\n') + '\n');

  const calls = spec.steps
    .filter((s) => typeof s !== 'string')
    .flat()
    .map((c) => ({ name: c.name, arguments: c.args, status: 'ok', kind: 'tool', call_id: c.id }));
  const truth = {
    framework: 'mastra',
    instrumentation: '@mastra/otel-bridge (OTel JS SDK, OTLP/HTTP JSON)',
    versions: VERSIONS,
    content_capture: true,
    scenario: scenario.name,
    runs: [
      {
        agent_name: spec.name,
        user_query: scenario.prompt,
        final_output: expected,
        parent_agent: null,
        available_tools: [...Object.keys(spec.tools), ...Object.keys(spec.workflows ?? {}).map((n) => `workflow-${n}`)],
        tool_calls: calls,
      },
    ],
    notes: [
      'Agent.generate() with a scripted MockLanguageModelV4; Observability with only the OtelBridge, whose spans ' +
        'go through a NodeTracerProvider and the OTLP/HTTP JSON trace exporter. Agent id = name. Tool-call ids ' +
        '(call_id) are the mock model\'s, fixed by the script.',
      scenario.notes ?? '',
    ].filter(Boolean).join(' '),
  };
  writeFileSync(`${stem}.truth.json`, JSON.stringify(truth, null, 2) + '\n');
  const spans = bodies.flatMap((b) => b.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))).length;
  console.log(`${scenario.name}: ${bodies.length} request(s), ${spans} spans`);
}
await provider.shutdown();
await rx.close();
if (rx.others.length) console.log('other requests:', [...new Set(rx.others)]);
