// Parts shared by record.mjs and otel_bridge/record.mjs: the scripted mock model and the forecast
// workflow. They take the recorder's own classes (`MockLanguageModelV4`, `createStep`, …): each recorder
// resolves its packages from its own node_modules.
const USAGE = {
  inputTokens: { total: 40, noCache: 40, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 12, text: 12, reasoning: 0 },
};

/** A mock model (the recorder's own `MockLanguageModelV4` from `ai/test`) that answers call i with
 * steps[i]: a list of tool calls `{id, name, args}` or the final text. */
export function scriptedModel(MockLanguageModelV4, label, steps) {
  let i = 0;
  const next = () => {
    if (i >= steps.length) throw new Error(`${label}: model called more often than scripted`);
    return steps[i++];
  };
  const meta = () => ({ id: `resp-${label}-${i - 1}`, modelId: 'mock-model-1', timestamp: new Date(0) });
  const toolParts = (step) =>
    step.map((c) => ({ type: 'tool-call', toolCallId: c.id, toolName: c.name, input: JSON.stringify(c.args) }));
  return new MockLanguageModelV4({
    provider: 'mock-provider',
    modelId: 'mock-model-1',
    // Agent.generate() drives doGenerate; doStream is there for the streaming paths.
    doGenerate: async () => {
      const step = next();
      const base = { usage: USAGE, warnings: [], response: meta() };
      if (typeof step === 'string') {
        return { ...base, content: [{ type: 'text', text: step }], finishReason: { unified: 'stop', raw: 'stop' } };
      }
      return { ...base, content: toolParts(step), finishReason: { unified: 'tool-calls', raw: 'tool_calls' } };
    },
    doStream: async () => {
      const step = next();
      const parts = [{ type: 'stream-start', warnings: [] }, { type: 'response-metadata', ...meta() }];
      if (typeof step === 'string') {
        parts.push({ type: 'text-start', id: 't0' }, { type: 'text-delta', id: 't0', delta: step }, { type: 'text-end', id: 't0' });
        parts.push({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: USAGE });
      } else {
        parts.push(...toolParts(step));
        parts.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: USAGE });
      }
      return {
        stream: new ReadableStream({
          start(c) {
            for (const p of parts) c.enqueue(p);
            c.close();
          },
        }),
      };
    },
  });
}

/**
 * A two-step forecast workflow: `first` (a step: a tool used as a step, or a function step) fetches
 * `{city, tempC, sky}`, then the function step `formatId` formats it as `{summary}`.
 */
export function forecastWorkflow({ createStep, createWorkflow, z }, { id, first, formatId }) {
  const format = createStep({
    id: formatId,
    inputSchema: z.object({ city: z.string(), tempC: z.number(), sky: z.string() }),
    outputSchema: z.object({ summary: z.string() }),
    execute: async ({ inputData }) => ({ summary: `${inputData.city}: ${inputData.tempC}°C, ${inputData.sky}` }),
  });
  return createWorkflow({
    id,
    description: 'Fetches and formats the forecast for a city',
    inputSchema: z.object({ city: z.string() }),
    outputSchema: z.object({ summary: z.string() }),
  })
    .then(first)
    .then(format)
    .commit();
}

export const TEMPS = { Paris: 18, London: 14, Tokyo: 22 };

/** `getWeather({city})`: throws for Atlantis; has an output schema so it can be a workflow step. */
export function weatherTool({ createTool, z }) {
  return createTool({
    id: 'getWeather',
    description: 'Current weather for a city',
    inputSchema: z.object({ city: z.string() }),
    outputSchema: z.object({ city: z.string(), tempC: z.number(), sky: z.string() }),
    execute: async ({ city }) => {
      if (city === 'Atlantis') throw new Error(`weather service has no station in ${city}`);
      return { city, tempC: TEMPS[city] ?? 20, sky: 'clear' };
    },
  });
}
