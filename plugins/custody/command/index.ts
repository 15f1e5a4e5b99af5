// `command` custody (SVC_ORCHESTRATOR_SIGNER_KIND=command, spec "Command signer contract"): an
// operator-supplied program holds the key. `<command> get-public-jwk` prints the EC P-256 JWK;
// `<command> sign` reads base64 bytes on stdin and prints the base64 of the 64-byte raw
// signature. Run with an argv array (never a shell), a time limit and bounded output.
import { calculateJwkThumbprint, type JWK } from 'jose';
import { execa, parseCommandString } from 'execa';
import { Type } from 'typebox';
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import { ES256_SIGNATURE_BYTES, type CustodyExtensionPoint } from '../../../core/extension-points/custody.ts';
import { ConflictError, SvcError } from '../../../core/errors.ts';

export const CommandCustodyConfig = Type.Object(
  {
    /** Program and fixed arguments, split like a command line (no shell: quotes group, nothing expands). */
    command: Type.String({ minLength: 1 }),
    timeoutMs: Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000 }),
    maxOutputBytes: Type.Integer({ minimum: 1024, maximum: 1024 * 1024, default: 64 * 1024 }),
    /** How long the public key is reused before asking the command again. */
    publicKeyCacheMs: Type.Integer({ minimum: 0, maximum: 3_600_000, default: 60_000 }),
  },
  { additionalProperties: false },
);

const B64 = /^[A-Za-z0-9+/]+={0,2}$/;

export class CommandCustody implements CustodyExtensionPoint {
  readonly #file: string;
  readonly #args: string[];
  readonly #display: string;
  readonly #timeoutMs: number;
  readonly #maxOutputBytes: number;
  readonly #cacheMs: number;
  #key: { kid: string; jwk: JWK; at: number } | undefined;

  constructor(config: { command: string; timeoutMs: number; maxOutputBytes: number; publicKeyCacheMs: number }) {
    const [file, ...args] = parseCommandString(config.command);
    if (!file) throw new SvcError('SVC_ERR_CUSTODY_COMMAND_CONFIG', 'SVC_ORCHESTRATOR_SIGNER_COMMAND is empty');
    this.#file = file;
    this.#args = args;
    this.#display = config.command;
    this.#timeoutMs = config.timeoutMs;
    this.#maxOutputBytes = config.maxOutputBytes;
    this.#cacheMs = config.publicKeyCacheMs;
  }

  #error(verb: string, what: string): SvcError {
    return new SvcError('SVC_ERR_CUSTODY_COMMAND', `signer command "${this.#display} ${verb}" ${what}`, { details: { command: this.#display, verb } });
  }

  async #run(verb: 'get-public-jwk' | 'sign', input?: string): Promise<string> {
    const result = await execa(this.#file, [...this.#args, verb], {
      timeout: this.#timeoutMs,
      maxBuffer: this.#maxOutputBytes,
      reject: false,
      stdin: input === undefined ? 'ignore' : 'pipe',
      ...(input === undefined ? {} : { input }),
      encoding: 'utf8',
      forceKillAfterDelay: 1000,
      killDescendants: true,
    } as never);
    const r = result as unknown as {
      timedOut: boolean;
      isMaxBuffer: boolean;
      failed: boolean;
      exitCode?: number;
      signal?: string;
      stdout: string;
      stderr: string;
      code?: string;
      originalMessage?: string;
    };
    if (r.timedOut) throw this.#error(verb, `did not finish within ${this.#timeoutMs} ms and was killed`);
    if (r.isMaxBuffer) throw this.#error(verb, `printed more than ${this.#maxOutputBytes} bytes`);
    if (r.failed) {
      const stderr = String(r.stderr ?? '').trim().split('\n')[0]?.slice(0, 300) ?? '';
      if (r.exitCode === undefined) throw this.#error(verb, `could not be started: ${r.originalMessage ?? r.code ?? 'unknown error'}`);
      throw this.#error(verb, `exited with code ${r.exitCode}${stderr ? `: ${stderr}` : ''}`);
    }
    return String(r.stdout).trim();
  }

  async #load(): Promise<{ kid: string; jwk: JWK; at: number }> {
    const out = await this.#run('get-public-jwk');
    let parsed: unknown;
    try {
      parsed = JSON.parse(out);
    } catch {
      throw this.#error('get-public-jwk', `printed something that is not JSON: ${JSON.stringify(out.slice(0, 60))}`);
    }
    const jwk = parsed as JWK;
    if (typeof jwk !== 'object' || jwk === null || jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.x !== 'string' || typeof jwk.y !== 'string') {
      throw this.#error('get-public-jwk', 'printed JSON that is not an EC P-256 public JWK (kty EC, crv P-256, x, y)');
    }
    if ('d' in jwk) throw this.#error('get-public-jwk', 'printed a private key (field "d"); it must print the public key only');
    const publicJwk: JWK = { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
    let kid: string;
    try {
      kid = await calculateJwkThumbprint(publicJwk, 'sha256');
    } catch {
      throw this.#error('get-public-jwk', 'printed a JWK whose coordinates are not base64url');
    }
    return { kid, jwk: publicJwk, at: Date.now() };
  }

  async #current(refresh = false): Promise<{ kid: string; jwk: JWK }> {
    if (!refresh && this.#key && Date.now() - this.#key.at < this.#cacheMs) return this.#key;
    this.#key = await this.#load();
    return this.#key;
  }

  async keyId(): Promise<string> {
    return (await this.#current()).kid;
  }

  async getPublicJwk(): Promise<JWK> {
    const { kid, jwk } = await this.#current();
    return { ...jwk, kid, alg: 'ES256', use: 'sig' };
  }

  async sign(bytes: Uint8Array, kid?: string): Promise<Uint8Array> {
    if (kid !== undefined && kid !== (await this.#current()).kid && kid !== (await this.#current(true)).kid) {
      throw new ConflictError('SVC_ERR_CUSTODY_KEY_STATE', `signer command "${this.#display}" now holds a different key than ${kid}`);
    }
    const out = await this.#run('sign', Buffer.from(bytes).toString('base64'));
    if (!B64.test(out) || out.length % 4 !== 0) throw this.#error('sign', `printed something that is not base64: ${JSON.stringify(out.slice(0, 60))}`);
    const signature = Buffer.from(out, 'base64');
    if (signature.length !== ES256_SIGNATURE_BYTES) {
      throw this.#error('sign', `printed ${signature.length} bytes; an ES256 signature is ${ES256_SIGNATURE_BYTES} raw bytes (r‖s, not DER)`);
    }
    return new Uint8Array(signature);
  }
}

export const commandCustody = definePlugin({
  id: 'command',
  kind: 'custody',
  version: '0.9.0',
  kernelRange: '^0.9.0',
  description: 'ES256 signing by an operator-supplied command (get-public-jwk / sign)',
  configSchema: CommandCustodyConfig,
  create: ({ config }) => new CommandCustody(config),
});

export default commandCustody;
