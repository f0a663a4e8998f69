// Minimal OTLP/HTTP JSON receiver on 127.0.0.1: keeps each POST body to /v1/traces (and /v1/logs)
// exactly as the exporter sent it (what a Collector's OTLP/HTTP receiver would get).
import { createServer } from 'node:http';

export async function startReceiver() {
  const bodies = [];
  const logs = [];
  const others = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const isJson = String(req.headers['content-type']).startsWith('application/json');
      if (req.method === 'POST' && req.url === '/v1/traces' && isJson) {
        bodies.push(JSON.parse(text));
      } else if (req.method === 'POST' && req.url === '/v1/logs' && isJson) {
        logs.push(JSON.parse(text));
      } else {
        others.push(`${req.method} ${req.url}`);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    /** Take (and forget) every trace request body received so far. */
    take: () => bodies.splice(0, bodies.length),
    takeLogs: () => logs.splice(0, logs.length),
    others,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
