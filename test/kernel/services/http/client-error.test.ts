// Requests the HTTP parser refuses (oversized headers, malformed request lines) each get their
// own answer over real sockets, even while the client is still sending, and other requests in
// flight on the same server are untouched (issue: under a fuzz stream about 2% of oversized
// requests saw a TCP reset instead of their 431).
import net from 'node:net';
import t from 'tap';
import { ErrorResponse } from '../../../../schemas/http/error.ts';
import { compileSchema } from '../../../../schemas/validate.ts';
import { createLogger } from '../../../../core/logging.ts';
import { createHttpServer, listen } from '../../../../kernel/services/http/index.ts';

const checkError = compileSchema(ErrorResponse);

interface RawOutcome {
  text: string;
  error?: string;
}

/** One request on its own socket; resolves with everything read, or the socket error's code. */
function raw(port: number, request: string): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('error', (e: NodeJS.ErrnoException) => resolve({ text, error: e.code ?? e.message }));
    socket.on('close', () => resolve({ text }));
    socket.write(request);
  });
}

function post(options: { bigHeader?: boolean } = {}): string {
  const body = 'x'.repeat(4_000);
  const big = options.bigHeader === true ? `X-Padding: ${'a'.repeat(64 * 1024)}\r\n` : '';
  return `POST /echo HTTP/1.1\r\nHost: test\r\n${big}Content-Type: text/plain\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
}

function bodyOf(text: string): unknown {
  return JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
}

async function server(t: { teardown(fn: () => unknown): void }): Promise<number> {
  const app = createHttpServer({ logger: createLogger({ level: 'silent', name: 'client-error-test' }) });
  app.post('/echo', async (request) => ({ bytes: String(request.body).length }));
  const bound = await listen(app, { port: 0 });
  t.teardown(() => app.close());
  return bound.port;
}

t.test('every oversized request gets its 431, never a reset; requests beside them get their 200', async (t) => {
  const port = await server(t);
  const counts = { big431: 0, bigOther: 0, normal200: 0, normalOther: 0 };
  const others: string[] = [];
  for (let round = 0; round < 10; round++) {
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const big = i % 2 === 0;
        return { big, outcome: await raw(port, post({ bigHeader: big })) };
      }),
    );
    for (const { big, outcome } of outcomes) {
      if (big && outcome.error === undefined && outcome.text.startsWith('HTTP/1.1 431 ')) {
        counts.big431++;
        const body = bodyOf(outcome.text);
        if (!checkError.check(body) || (body as ErrorResponse).error.code !== 'SVC_ERR_HTTP_HEADERS_TOO_LARGE') others.push(`431 body ${JSON.stringify(body)}`);
      } else if (!big && outcome.error === undefined && outcome.text.startsWith('HTTP/1.1 200 ')) counts.normal200++;
      else {
        if (big) counts.bigOther++;
        else counts.normalOther++;
        others.push(`${big ? 'oversized' : 'normal'}: ${outcome.error ?? 'no error'} after ${JSON.stringify(outcome.text.slice(0, 40))}`);
      }
    }
  }
  t.comment(`oversized → 431: ${counts.big431}, other: ${counts.bigOther}; normal → 200: ${counts.normal200}, other: ${counts.normalOther}`);
  t.same(others, [], 'no reset, no other answer');
  t.equal(counts.big431, 200);
  t.equal(counts.normal200, 200);
});

t.test('fetch (undici) with an oversized header reads the 431 and its JSON error', async (t) => {
  const port = await server(t);
  for (let i = 0; i < 20; i++) {
    const response = await fetch(`http://127.0.0.1:${port}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'x-padding': 'b'.repeat(40 * 1024) },
      body: 'y'.repeat(8_000),
    });
    t.equal(response.status, 431, `request ${i}`);
    const body = (await response.json()) as ErrorResponse;
    t.equal(body.error.code, 'SVC_ERR_HTTP_HEADERS_TOO_LARGE');
  }
  const ok = await fetch(`http://127.0.0.1:${port}/echo`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'z' });
  t.equal(ok.status, 200, 'the server still answers');
});

t.test('a request that is not HTTP gets a 400 with a catalogued code', async (t) => {
  const port = await server(t);
  const outcome = await raw(port, 'BREW /pot HTCPCP/1.0\r\n\r\n');
  t.equal(outcome.error, undefined);
  t.match(outcome.text, /^HTTP\/1\.1 400 /);
  t.equal((bodyOf(outcome.text) as ErrorResponse).error.code, 'SVC_ERR_HTTP_BAD_REQUEST');
});

t.test('a refused client that keeps its socket open is closed by the server after the linger', async (t) => {
  const port = await server(t);
  // allowHalfOpen: the client does not answer the server's FIN with its own, as a client that
  // ignores the answer would not; only the server's linger can end this connection.
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString()));
  const trickle = setInterval(() => {
    if (socket.writable) socket.write('more-bytes\r\n');
  }, 100);
  t.teardown(() => clearInterval(trickle));
  socket.write(`GET / HTTP/1.1\r\nHost: test\r\nX-Padding: ${'c'.repeat(20 * 1024)}\r\n`);
  const closed = await new Promise<boolean>((resolve) => {
    const guard = setTimeout(() => resolve(false), 60_000);
    socket.on('close', () => {
      clearTimeout(guard);
      resolve(true);
    });
    socket.on('error', () => undefined);
  });
  clearInterval(trickle);
  t.ok(closed, 'the server ended the connection by itself');
  t.match(text, /^HTTP\/1\.1 431 /);
});
