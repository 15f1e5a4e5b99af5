// The working-tree overlay of `svc run remote` (spec "Limits", storage paragraph): the files
// modified, added or left untracked relative to HEAD, and the list of files deleted — never
// git-ignored paths, root `.svcignore` matches, the `.git` directory, nor the local secret files
// (those travel in their own sealed box). Packed as
//   uint32 BE manifest length | manifest JSON `{ deleted: [...], write?: [{ path, text }] }` |
//   tar (gzipped up to 8 MiB)
// where `write` carries the lock compiled in memory as `.svc/svc.lock.json` (the agent reads the
// workflow's entry from the tree's lock: a workflow added without `svc compile` must be there).
// then sealed to the orchestrator's key (core/remote-run-box.ts).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import ignore from 'ignore';
import * as tar from 'tar';
import { InputError, messageOf } from '../../core/errors.ts';
import { git } from '../preview/local-git.ts';

/** spec "Limits": under 50 MB normal, 50 to 500 MB a warning, over 500 MB an error. */
export const UPLOAD_LIMITS = { warnBytes: 50 * 1000 * 1000, maxBytes: 500 * 1000 * 1000 };
export type UploadLimits = typeof UPLOAD_LIMITS;

/** Overlays whose tar is at most this large are gzipped. */
export const GZIP_MAX_BYTES = 8 * 1024 * 1024;

/** Local secret files: uploaded sealed as secrets, never as part of the tree. */
export const LOCAL_SECRET_FILES = ['.svc/.secrets', '.svc/.env.local', '.svc/secrets.yaml'];

export interface Overlay {
  /** Repo-relative paths packed (modified, added, untracked). */
  files: string[];
  /** Repo-relative paths the working tree deleted. */
  deleted: string[];
  /** The packed plaintext (manifest + tar.gz). */
  packed: Buffer;
}

function splitZ(text: string): string[] {
  return text.split('\0').filter((s) => s !== '');
}

async function svcIgnore(top: string): Promise<(path: string) => boolean> {
  let text: string;
  try {
    text = await readFile(join(top, '.svcignore'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return () => false;
    throw new InputError('SVC_ERR_REMOTE_RUN_OVERLAY', `cannot read .svcignore: ${messageOf(error)}`);
  }
  const matcher = ignore().add(text);
  return (path) => matcher.ignores(path);
}

/** Which paths differ from HEAD in the work tree at `top`. */
export async function overlayPaths(top: string): Promise<{ files: string[]; deleted: string[] }> {
  const ignored = await svcIgnore(top);
  const keep = (p: string) => p !== '.git' && !p.startsWith('.git/') && !LOCAL_SECRET_FILES.includes(p) && !ignored(p);
  // Staged and unstaged changes against HEAD, renames as delete + add.
  const diff = splitZ(await git(top, ['diff', '--name-status', '--no-renames', '-z', 'HEAD']));
  const files = new Set<string>();
  const deleted = new Set<string>();
  for (let i = 0; i + 1 < diff.length; i += 2) {
    const status = diff[i]!;
    const path = diff[i + 1]!;
    if (!keep(path)) continue;
    if (status.startsWith('D')) deleted.add(path);
    else files.add(path);
  }
  for (const path of splitZ(await git(top, ['ls-files', '--others', '--exclude-standard', '-z']))) if (keep(path)) files.add(path);
  return { files: [...files].sort(), deleted: [...deleted].sort() };
}

/** A file the overlay writes that is not in the working tree (the lock compiled in memory). */
export interface OverlayWrite {
  path: string;
  text: string;
}

export async function packOverlay(top: string, paths?: { files: string[]; deleted: string[] }, writes: readonly OverlayWrite[] = []): Promise<Overlay> {
  const { files, deleted } = paths ?? (await overlayPaths(top));
  const chunks: Buffer[] = [];
  if (files.length > 0) {
    const stream = tar.c({ cwd: top, portable: true, noDirRecurse: true }, files);
    for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  }
  let archive = Buffer.concat(chunks);
  // Compressed when small (source text shrinks several times, quickly); a large overlay is mostly
  // binary files gzip barely shrinks at ~20 MB/s, so it travels as a plain tar (the agent's
  // extraction reads either).
  if (archive.length > 0 && archive.length <= GZIP_MAX_BYTES) archive = gzipSync(archive, { level: 6 });
  const manifest = Buffer.from(JSON.stringify(writes.length === 0 ? { deleted } : { deleted, write: writes }));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(manifest.length);
  return { files, deleted, packed: Buffer.concat([length, manifest, archive]) };
}

/** `ok`, `warn` (stderr warning) or an error (over the maximum). */
export function checkUploadSize(bytes: number, limits: UploadLimits = UPLOAD_LIMITS): 'ok' | 'warn' {
  if (bytes > limits.maxBytes) {
    throw new InputError(
      'SVC_ERR_REMOTE_RUN_TOO_LARGE',
      `the working-tree overlay is ${megabytes(bytes)} MB, over the ${megabytes(limits.maxBytes)} MB limit of a remote run; commit the change, or list large generated files in .svcignore`,
    );
  }
  return bytes >= limits.warnBytes ? 'warn' : 'ok';
}

export function megabytes(bytes: number): string {
  return (bytes / 1_000_000).toFixed(1);
}
