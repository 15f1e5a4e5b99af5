// The Firecracker API over its unix socket (PUT with JSON bodies; 204 on success, a JSON
// `fault_message` on error).
import { request } from 'node:http';
import { UnavailableError } from '../../../core/errors.ts';

export function firecrackerPut(socketPath: string, path: string, body: unknown, timeoutMs = 10_000): Promise<void> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath, path, method: 'PUT', headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(payload) }, timeout: timeoutMs },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          if ((res.statusCode ?? 500) < 300) return resolve();
          let fault = text;
          try {
            fault = (JSON.parse(text) as { fault_message?: string }).fault_message ?? text;
          } catch {
            // plain text
          }
          reject(new UnavailableError('SVC_ERR_SANDBOX_FIRECRACKER_API', `firecracker PUT ${path} failed (HTTP ${res.statusCode}): ${fault}`));
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (error) => reject(new UnavailableError('SVC_ERR_SANDBOX_FIRECRACKER_API', `firecracker PUT ${path} failed: ${error.message}`, { cause: error })));
    req.end(payload);
  });
}
