// The hook's outbox: a push the receiver did not take is kept in the bare repository
// (`<git dir>/svc-outbox/`, one JSON file per push, mode 0600) and sent again, with its first
// delivery id so the orchestrator's dedup makes a repeat harmless, before the next push's own
// deliveries or by `svc hook post-receive --flush`. The body is kept; the signature is not: it is
// made at each send with the secret configured then, so a rotated or corrected secret applies.
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { messageOf } from '../../core/errors.ts';

export const OUTBOX_DIR = 'svc-outbox';
/** Past this many kept pushes the oldest go (with a warning): a receiver gone for good must not fill the disk. */
export const OUTBOX_MAX_ENTRIES = 1000;

export interface OutboxEntry {
  version: 1;
  deliveryId: string;
  event: string;
  ref: string;
  before: string;
  after: string;
  /** The exact JSON body first sent. */
  body: string;
  keptAt: string;
  attempts: number;
  lastOutcome: string;
}

export interface KeptPush {
  file: string;
  entry: OutboxEntry;
}

export function outboxPath(gitDir: string): string {
  return join(gitDir, OUTBOX_DIR);
}

function isEntry(value: unknown): value is OutboxEntry {
  const v = value as Partial<OutboxEntry> | null;
  return (
    typeof v === 'object' && v !== null && v.version === 1 && typeof v.deliveryId === 'string' && typeof v.event === 'string' && typeof v.ref === 'string' &&
    typeof v.before === 'string' && typeof v.after === 'string' && typeof v.body === 'string' && typeof v.keptAt === 'string' &&
    typeof v.attempts === 'number' && typeof v.lastOutcome === 'string'
  );
}

/** Kept pushes, oldest first; unreadable files are named in `problems` and left where they are. */
export async function listOutbox(gitDir: string): Promise<{ kept: KeptPush[]; problems: string[] }> {
  const dir = outboxPath(gitDir);
  const names = await readdir(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [] as string[];
    throw error;
  });
  const kept: KeptPush[] = [];
  const problems: string[] = [];
  for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
    try {
      const entry: unknown = JSON.parse(await readFile(join(dir, name), 'utf8'));
      if (!isEntry(entry)) throw new Error('not an outbox entry');
      kept.push({ file: name, entry });
    } catch (error) {
      problems.push(`outbox file ${join(dir, name)} cannot be read (${messageOf(error)}); move it away or delete it`);
    }
  }
  return { kept, problems };
}

/** Written whole or not at all (temporary file, then rename). */
async function writeEntry(dir: string, file: string, entry: OutboxEntry): Promise<void> {
  const temporary = join(dir, `.${file}.${randomUUID()}.tmp`);
  await writeFile(temporary, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
  await rename(temporary, join(dir, file));
}

/** Keeps a push; returns the files dropped to stay under OUTBOX_MAX_ENTRIES. */
export async function keepPush(gitDir: string, entry: OutboxEntry, now: number): Promise<KeptPush[]> {
  const dir = outboxPath(gitDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // Sortable by time first: the outbox is sent in push order.
  const file = `${String(now).padStart(15, '0')}-${entry.deliveryId}.json`;
  await writeEntry(dir, file, entry);
  const { kept } = await listOutbox(gitDir);
  const dropped = kept.slice(0, Math.max(0, kept.length - OUTBOX_MAX_ENTRIES));
  for (const d of dropped) await rm(join(dir, d.file), { force: true });
  return dropped;
}

export async function updateKept(gitDir: string, kept: KeptPush): Promise<void> {
  await writeEntry(outboxPath(gitDir), kept.file, kept.entry);
}

export async function removeKept(gitDir: string, kept: KeptPush): Promise<void> {
  await rm(join(outboxPath(gitDir), kept.file), { force: true });
}
