// A static agent's record of the jobs it is running, under <workDir>/in-flight/, so that after a
// crash or SIGKILL the restarted agent (same id) reports them at registration and runs them again
// (spec: recovering → dispatched, nothing re-dispatched). A dispatch carries the job's released
// secrets, so a record is sealed (AES-256-GCM) under a key derived from the agent's token, which
// lives in the agent's environment and never on disk: a copy of the work dir (a backup, a shared
// volume, a leaked image layer) holds no readable secret. Without a token (`agentAuth: none`)
// there is nothing to derive a key from; the record is then plain JSON (mode 0600), and the agent
// says so once at start.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { messageOf } from '../../core/errors.ts';
import type { JobDispatch } from '../../schemas/wire/agent.ts';

const FORMAT = 'svc-in-flight-v1';
const MAX_RECORDS = 1000;

interface SealedRecord {
  format: typeof FORMAT;
  /** base64 of IV (12) ‖ tag (16) ‖ ciphertext. */
  sealed: string;
}

export class InFlightStore {
  readonly dir: string;
  readonly #key: Buffer | undefined;

  /** `token` and `agentId` give the sealing key; without a token records are plain JSON. */
  constructor(workDir: string, agentId: string, token: string | undefined) {
    this.dir = join(workDir, 'in-flight');
    this.#key = token === undefined ? undefined : Buffer.from(hkdfSync('sha256', token, agentId, 'svc agent in-flight records', 32));
  }

  get sealed(): boolean {
    return this.#key !== undefined;
  }

  async save(dispatch: JobDispatch): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.#fileOf(dispatch.jobId);
    await writeFile(file, this.#encode(dispatch), { mode: 0o600 });
    await chmod(file, 0o600);
  }

  async remove(jobId: string): Promise<void> {
    await unlink(this.#fileOf(jobId)).catch(() => undefined);
  }

  /** Dispatches a previous process of this agent left behind; unreadable records are dropped. */
  async load(logger: Logger): Promise<Map<string, JobDispatch>> {
    const found = new Map<string, JobDispatch>();
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return found;
    }
    for (const name of names.filter((n) => n.endsWith('.json')).slice(0, MAX_RECORDS)) {
      const file = join(this.dir, name);
      try {
        const dispatch = this.#decode(await readFile(file, 'utf8'), name.slice(0, -'.json'.length));
        if (dispatch?.type !== 'job.dispatch' || `${dispatch.jobId}.json` !== name) throw new Error('not a job.dispatch for this file name');
        found.set(dispatch.jobId, dispatch);
      } catch (error) {
        logger.warn({ file, err: messageOf(error) }, 'dropping an unreadable in-flight job record');
        await unlink(file).catch(() => undefined);
      }
    }
    return found;
  }

  #fileOf(jobId: string): string {
    return join(this.dir, `${jobId}.json`);
  }

  #encode(dispatch: JobDispatch): string {
    if (this.#key === undefined) return JSON.stringify(dispatch);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(`in-flight:${dispatch.jobId}`));
    const body = Buffer.concat([cipher.update(JSON.stringify(dispatch), 'utf8'), cipher.final()]);
    const record: SealedRecord = { format: FORMAT, sealed: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64') };
    return JSON.stringify(record);
  }

  #decode(text: string, jobId: string): JobDispatch {
    const parsed = JSON.parse(text) as Partial<SealedRecord> & { type?: unknown };
    if (parsed.format !== FORMAT) {
      // A plain record is accepted only when this agent does not seal: a sealed agent never wrote it.
      if (this.#key !== undefined) throw new Error('a plain record where this agent seals its records');
      return parsed as unknown as JobDispatch;
    }
    if (this.#key === undefined) throw new Error('a sealed record, but this agent has no token to open it');
    const raw = Buffer.from(parsed.sealed ?? '', 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(`in-flight:${jobId}`));
    decipher.setAuthTag(raw.subarray(12, 28));
    return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as JobDispatch;
  }
}
