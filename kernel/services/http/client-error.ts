// Requests Node's HTTP parser refuses before any route sees them: headers over the size limit,
// malformed request lines, a request that timed out while arriving. fastify's default answer
// writes the response and destroys the socket at once; when the client is still sending (a
// 64 KB header, then its body) the unread bytes make the kernel send a TCP reset, and the client
// sees ECONNRESET instead of its 431. Here the answer is written, the sending side is closed with
// a FIN, and what the client still sends is read and dropped until it closes too (bounded by
// LINGER_MS) — the "lingering close" other HTTP servers do — so every refused request gets its
// own answer. Bodies use the errors' JSON shape, with a catalogued code.
import type { Socket } from 'node:net';
import type { Logger } from '../../../core/logging.ts';
import type { ErrorResponse } from '../../../schemas/http/error.ts';

/** How long a refused connection is drained before it is destroyed regardless. */
export const LINGER_MS = 2_000;

interface Refusal {
  status: number;
  reason: string;
  body: ErrorResponse;
}

function refusalFor(error: NodeJS.ErrnoException): Refusal {
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    return {
      status: 431,
      reason: 'Request Header Fields Too Large',
      body: { error: { code: 'SVC_ERR_HTTP_HEADERS_TOO_LARGE', message: 'request headers are larger than the server accepts (16 KiB in all); send large values in the body' } },
    };
  }
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return {
      status: 408,
      reason: 'Request Timeout',
      body: { error: { code: 'SVC_ERR_HTTP_REQUEST_TIMEOUT', message: 'the request did not arrive in full within the server\'s request timeout' } },
    };
  }
  return {
    status: 400,
    reason: 'Bad Request',
    body: { error: { code: 'SVC_ERR_HTTP_BAD_REQUEST', message: `bad request: the request is not valid HTTP/1.1 (${error.code ?? 'parse error'})` } },
  };
}

/** fastify's `clientErrorHandler`: answer once, half-close, drain, then destroy. */
export function lingeringClientErrorHandler(logger: Logger): (error: NodeJS.ErrnoException, socket: Socket) => void {
  // The parser reports an error for every chunk that arrives after the first one; answer once.
  const answered = new WeakSet<Socket>();
  return (error, socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed || answered.has(socket)) return;
    answered.add(socket);
    const refusal = refusalFor(error);
    logger.debug({ code: error.code, status: refusal.status }, 'request refused by the HTTP parser');
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const text = JSON.stringify(refusal.body);
    const linger = setTimeout(() => socket.destroy(), LINGER_MS);
    linger.unref();
    socket.once('close', () => clearTimeout(linger));
    // The client's FIN after it read the answer: nothing more will come, and nothing is unread.
    socket.once('end', () => socket.destroy());
    socket.on('error', () => socket.destroy());
    socket.end(
      `HTTP/1.1 ${refusal.status} ${refusal.reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
    socket.resume();
  };
}
