// A static agent's record of the jobs it is running, under <workDir>/in-flight/, so that after a
// crash or SIGKILL the restarted agent (same id) reports them at registration and runs them again
// (spec: recovering → dispatched, nothing re-dispatched). A dispatch carries the job's released
// secrets, so a record is sealed (AES-256-GCM) under a key derived from the agent's token, which
// lives in the agent's environment and never on disk: a copy of the work dir (a backup, a shared
// volume, a leaked image layer) holds no readable secret. Without a token (`agentAuth: none`)
// there is nothing to derive a key from; the record is then plain JSON (mode 0600), and the agent
// says so once at start.
//
// Beside each record, `<jobId>.progress` (sealed the same way) holds the job's step checkpoints
// (schemas/wire/runner.ts JobProgress): the restarted agent resumes the job after its last
// finished step instead of from the start (docs/agent.md "When an agent restarts mid-job"). It
// is replaced atomically (write, then rename), so a kill mid-write leaves the previous one.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { delimiter, join, sep } from 'node:path';
import type { Logger } from 'pino';
import { messageOf } from '../../core/errors.ts';
import type { JobDispatch } from '../../schemas/wire/agent.ts';
import { JobProgress, type EnvEffect } from '../../schemas/wire/runner.ts';
import { compileSchema, formatIssues } from '../../schemas/validate.ts';

const FORMAT = 'svc-in-flight-v1';
const MAX_RECORDS = 1000;
const PROGRESS = '.progress';
const checkProgress = compileSchema(JobProgress);

/** `value` with each PATH-style entry under `from` moved under `to`. */
export function rebase(value: string, from: string, to: string): string {
  if (from === to) return value;
  return value
    .split(delimiter)
    .map((entry) => (entry === from ? to : entry.startsWith(from + sep) ? to + entry.slice(from.length) : entry))
    .join(delimiter);
}

/**
 * A job's progress carried to the workspace of the resumed job: setEnv values and addPath
 * entries under the old workspace move under the new one (it is set up afresh, maybe elsewhere).
 */
export function carryProgress(progress: JobProgress, workspace: string): JobProgress {
  const move = (effect: EnvEffect): EnvEffect =>
    'setEnv' in effect ? { setEnv: effect.setEnv, value: rebase(effect.value, progress.workspace, workspace) } : { addPath: rebase(effect.addPath, progress.workspace, workspace) };
  return { ...progress, workspace, steps: progress.steps.map((step) => ({ ...step, effects: step.effects.map(move) })) };
}

interface SealedRecord {
  format: typeof FORMAT;
  /** base64 of IV (12) ‖ tag (16) ‖ ciphertext. */
  sealed: string;
}

export class InFlightStore {
  readonly dir: string;
  readonly #key: Buffer | undefined;
  readonly #progress = new Map<string, JobProgress>();

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
    await writeFile(file, this.#encode(JSON.stringify(dispatch), `in-flight:${dispatch.jobId}`), { mode: 0o600 });
    await chmod(file, 0o600);
  }

  /** Replaces the job's step checkpoints (atomically: a kill mid-write keeps the previous ones). */
  async saveProgress(jobId: string, progress: JobProgress): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = join(this.dir, `${jobId}${PROGRESS}`);
    await writeFile(`${file}.tmp`, this.#encode(JSON.stringify(progress), `in-flight-progress:${jobId}`), { mode: 0o600 });
    await rename(`${file}.tmp`, file);
  }

  /** The progress `load` found for a job a previous process left behind. */
  progressOf(jobId: string): JobProgress | undefined {
    return this.#progress.get(jobId);
  }

  async remove(jobId: string): Promise<void> {
    this.#progress.delete(jobId);
    for (const file of [this.#fileOf(jobId), join(this.dir, `${jobId}${PROGRESS}`), join(this.dir, `${jobId}${PROGRESS}.tmp`)]) await unlink(file).catch(() => undefined);
  }

  /**
   * The job's progress record, if any. One that does not open drops the job: run again from
   * its start it could repeat finished steps; not reported, the orchestrator fails it.
   */
  async #loadProgress(jobId: string): Promise<JobProgress | undefined> {
    let text: string;
    try {
      text = await readFile(join(this.dir, `${jobId}${PROGRESS}`), 'utf8');
    } catch {
      return undefined;
    }
    const checked = checkProgress.validate(JSON.parse(this.#decode(text, `in-flight-progress:${jobId}`)));
    if (!checked.ok) throw new Error(`not a job progress record: ${formatIssues(checked.issues)}`);
    return checked.value;
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
        const jobId = name.slice(0, -'.json'.length);
        const dispatch = JSON.parse(this.#decode(await readFile(file, 'utf8'), `in-flight:${jobId}`)) as JobDispatch;
        if (dispatch?.type !== 'job.dispatch' || `${dispatch.jobId}.json` !== name) throw new Error('not a job.dispatch for this file name');
        const progress = await this.#loadProgress(jobId);
        if (progress !== undefined) this.#progress.set(jobId, progress);
        found.set(dispatch.jobId, dispatch);
      } catch (error) {
        logger.warn({ file, err: messageOf(error) }, 'dropping an unreadable in-flight job record');
        await this.remove(name.slice(0, -'.json'.length));
      }
    }
    // Progress records whose job record is gone.
    for (const name of names.filter((n) => n.endsWith(PROGRESS) || n.endsWith(`${PROGRESS}.tmp`))) {
      const jobId = name.slice(0, name.indexOf(PROGRESS));
      if (!found.has(jobId)) await unlink(join(this.dir, name)).catch(() => undefined);
    }
    return found;
  }

  #fileOf(jobId: string): string {
    return join(this.dir, `${jobId}.json`);
  }

  /** `json` sealed under the agent's key, bound to `aad` (the record's kind and job id). */
  #encode(json: string, aad: string): string {
    if (this.#key === undefined) return json;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(aad));
    const body = Buffer.concat([cipher.update(json, 'utf8'), cipher.final()]);
    const record: SealedRecord = { format: FORMAT, sealed: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64') };
    return JSON.stringify(record);
  }

  /** The JSON text of a record written by #encode with the same `aad`. */
  #decode(text: string, aad: string): string {
    const parsed = JSON.parse(text) as Partial<SealedRecord> & { type?: unknown };
    if (parsed.format !== FORMAT) {
      // A plain record is accepted only when this agent does not seal: a sealed agent never wrote it.
      if (this.#key !== undefined) throw new Error('a plain record where this agent seals its records');
      return text;
    }
    if (this.#key === undefined) throw new Error('a sealed record, but this agent has no token to open it');
    const raw = Buffer.from(parsed.sealed ?? '', 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }
}
