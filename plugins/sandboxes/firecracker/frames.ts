// Host <-> guest framing over the VM's vsock: one JSON object per line.
//   host → guest: {t:'start', argv, env, cwd, ipc}, {t:'ipc', m}, {t:'signal', signal}
//   guest → host: {t:'ipc', m}, {t:'out', s:'stdout'|'stderr', d:<base64>}, {t:'exit', code, signal}
import type { Socket } from 'node:net';

export type Frame =
  | { t: 'start'; argv: string[]; env: Record<string, string>; cwd: string; ipc: boolean; workspaceTar?: string }
  | { t: 'ipc'; m: unknown }
  | { t: 'signal'; signal: NodeJS.Signals }
  | { t: 'out'; s: 'stdout' | 'stderr'; d: string }
  | { t: 'exit'; code: number | null; signal: string | null };

export function writeFrame(socket: Socket, frame: Frame): void {
  if (!socket.destroyed) socket.write(`${JSON.stringify(frame)}\n`);
}

export function readFrames(socket: Socket, onFrame: (frame: Frame) => void): void {
  let buffer = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    let nl = buffer.indexOf('\n');
    while (nl !== -1) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.trim() !== '') {
        try {
          onFrame(JSON.parse(line) as Frame);
        } catch {
          // A malformed frame is dropped; the other side's process exit still ends the session.
        }
      }
      nl = buffer.indexOf('\n');
    }
  });
}
