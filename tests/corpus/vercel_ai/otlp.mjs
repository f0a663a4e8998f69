// In-memory OTel SDK + OTLP/JSON writer shared by the Vercel AI SDK corpus generator.
// Each scenario is exported as ONE ExportTraceServiceRequest in OTLP/JSON (hex ids), one line,
// the same shape as tests/corpus/_record.py writes for the Python corpus.
import { writeFileSync } from 'node:fs';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

export class Recorder {
  constructor(serviceName) {
    this.exporter = new InMemorySpanExporter();
    this.provider = new TracerProvider({
      resource: resourceFromAttributes({ 'service.name': serviceName }),
      spanProcessors: [new SimpleSpanProcessor({ exporter: this.exporter })],
    });
    // The AI SDK nests spans through the active context, so a real context manager is required
    // (without one every span would become its own root).
    const manager = new AsyncLocalStorageContextManager();
    manager.enable();
    context.setGlobalContextManager(manager);
    trace.setGlobalTracerProvider(this.provider);
  }

  tracer(name = 'corpus') {
    return this.provider.getTracer(name);
  }

  /** Write everything finished so far to `<stem>.traces.jsonl` and clear the buffer. */
  async write(stem) {
    await this.provider.forceFlush();
    const spans = this.exporter.getFinishedSpans();
    if (spans.length === 0) throw new Error(`no spans recorded for ${stem}`);
    const body = new TextDecoder().decode(JsonTraceSerializer.serializeRequest(spans));
    // Round-trip so the line is compact, canonical JSON.
    writeFileSync(`${stem}.traces.jsonl`, JSON.stringify(JSON.parse(body)) + '\n');
    this.exporter.reset();
    return spans.length;
  }
}

export function writeTruth(stem, truth) {
  writeFileSync(`${stem}.truth.json`, JSON.stringify(truth, null, 2) + '\n');
}
