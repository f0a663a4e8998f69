// A minimal OpenAI-compatible chat server for tests: POST /v1/chat/completions (non-streaming) and
// GET /v1/models over node-llama-cpp's prebuilt llama.cpp (CPU only; never builds or downloads).
// Usage: node server.mjs <model.gguf> <port> [model-name]. Binds 127.0.0.1 only. Requests are served
// one at a time (one context sequence); response_format json_schema / json_object+schema constrain
// the output with a grammar built from the schema.
import http from "node:http";
import { getLlama, LlamaChatSession } from "node-llama-cpp";

const [modelPath, portText, modelName = "smollm2"] = process.argv.slice(2);
if (!modelPath || !portText) {
    console.error("usage: node server.mjs <model.gguf> <port> [model-name]");
    process.exit(2);
}

const llama = await getLlama({ gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({ contextSize: 2048, sequences: 1, threads: 2 });
let queue = Promise.resolve(); // serializes requests onto the single sequence

function schemaOf(format) {
    if (!format || format.type === "text") return undefined;
    if (format.type === "json_schema") return format.json_schema?.schema ?? {};
    if (format.type === "json_object") return format.schema ?? {};
    throw new Error(`unsupported response_format type: ${format.type}`);
}

function toHistory(messages) {
    // OpenAI messages -> node-llama-cpp chat history; the last user message becomes the prompt.
    const text = (m) => (typeof m.content === "string" ? m.content
        : (m.content ?? []).map((part) => part.text ?? "").join(""));
    const history = messages.slice(0, -1).map((m) => m.role === "assistant"
        ? { type: "model", response: [text(m)] }
        : { type: m.role === "user" ? "user" : "system", text: text(m) });
    const last = messages.at(-1);
    if (!last || last.role !== "user") throw new Error("the last message must have role 'user'");
    return { history, prompt: text(last) };
}

async function complete(body) {
    const { history, prompt } = toHistory(body.messages ?? []);
    const schema = schemaOf(body.response_format);
    const grammar = schema === undefined ? undefined : await llama.createGrammarForJsonSchema(schema);
    const sequence = context.getSequence();
    const session = new LlamaChatSession({ contextSequence: sequence, autoDisposeSequence: true });
    try {
        session.setChatHistory([...history]);
        const before = { input: sequence.tokenMeter.usedInputTokens, output: sequence.tokenMeter.usedOutputTokens };
        const result = await session.promptWithMeta(prompt, {
            grammar,
            maxTokens: body.max_tokens ?? body.max_completion_tokens ?? 512,
            temperature: body.temperature ?? 0,
        });
        const promptTokens = sequence.tokenMeter.usedInputTokens - before.input;
        const completionTokens = sequence.tokenMeter.usedOutputTokens - before.output;
        return {
            id: `chatcmpl-${Date.now().toString(36)}`,
            object: "chat.completion",
            created: Math.floor(Date.now() / 1000),
            model: modelName,
            choices: [{
                index: 0,
                message: { role: "assistant", content: result.responseText },
                finish_reason: result.stopReason === "maxTokens" ? "length" : "stop",
            }],
            usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens,
                total_tokens: promptTokens + completionTokens },
        };
    } finally {
        session.dispose();
    }
}

function send(res, status, payload) {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(payload));
}

const server = http.createServer((req, res) => {
    if (req.method === "GET" && req.url === "/v1/models") {
        return send(res, 200, { object: "list", data: [{ id: modelName, object: "model", owned_by: "local" }] });
    }
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        return send(res, 404, { error: { message: `no route ${req.method} ${req.url}`, type: "not_found" } });
    }
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
        const started = Date.now();
        queue = queue.then(async () => {
            try {
                const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
                if (body.stream) throw new Error("streaming is not supported");
                const answer = await complete(body);
                console.log(`200 ${answer.usage.prompt_tokens}+${answer.usage.completion_tokens} tokens `
                    + `in ${Date.now() - started} ms: ${answer.choices[0].message.content}`);
                send(res, 200, answer);
            } catch (error) {
                console.log(`400 ${error?.stack ?? error}`);
                send(res, 400, { error: { message: String(error?.message ?? error), type: "invalid_request_error" } });
            }
        });
    });
});
server.listen(Number(portText), "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${portText}/v1`));
for (const signal of ["SIGTERM", "SIGINT"]) {
    process.on(signal, () => { server.close(); void model.dispose().finally(() => process.exit(0)); });
}
