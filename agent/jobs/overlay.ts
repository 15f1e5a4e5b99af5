// `svc run remote` (docs/run-remote.md): the developer's working-tree overlay on top of the
// checkout at `sha`. The job's dispatch names a pre-signed GET of the sealed box and its
// AES-256-GCM key; the box holds `uint32 BE length | manifest JSON { deleted: [...] } | tar` (gzipped or not)
// of the modified and new files (cli/remote-run/overlay.ts). A box that does not open, or a
// hostile archive, fails the job before a step runs.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { InputError } from '../../core/errors.ts';
import { openBoxWithKey } from '../../core/remote-run-box.ts';
import { downloadToFile } from './download.ts';
import { extractArchive } from './extract.ts';

export interface OverlayOptions {
  overlay: { url: string; key: string };
  jobRoot: string;
  srcDir: string;
  log(text: string): void;
  signal?: AbortSignal;
}

function safeRelative(path: string): boolean {
  const normal = posix.normalize(path);
  return path !== '' && !path.includes('\0') && normal !== '..' && !normal.startsWith('../') && !posix.isAbsolute(normal) && normal !== '.git' && !normal.startsWith('.git/');
}

export async function applyOverlay(options: OverlayOptions): Promise<{ files: number; deleted: number }> {
  const boxFile = join(options.jobRoot, 'overlay.box');
  const tarFile = join(options.jobRoot, 'overlay.tar');
  await downloadToFile(options.overlay.url, boxFile, options.signal === undefined ? {} : { signal: options.signal });
  const plain = openBoxWithKey(Buffer.from(options.overlay.key, 'base64'), await readFile(boxFile));
  await rm(boxFile, { force: true });
  const length = plain.length >= 4 ? plain.readUInt32BE(0) : -1;
  if (length < 0 || 4 + length > plain.length) throw new InputError('SVC_ERR_AGENT_OVERLAY_INVALID', 'the overlay is truncated; run svc run remote again');
  let deleted: string[];
  let writes: Array<{ path: string; text: string }>;
  try {
    const manifest = JSON.parse(plain.subarray(4, 4 + length).toString('utf8')) as { deleted?: unknown; write?: unknown };
    deleted = Array.isArray(manifest.deleted) ? manifest.deleted.filter((d): d is string => typeof d === 'string') : [];
    writes = Array.isArray(manifest.write)
      ? manifest.write.filter((w): w is { path: string; text: string } => typeof w === 'object' && w !== null && typeof w.path === 'string' && typeof w.text === 'string')
      : [];
  } catch {
    throw new InputError('SVC_ERR_AGENT_OVERLAY_INVALID', 'the overlay\'s manifest is not valid JSON; run svc run remote again');
  }
  let entries = 0;
  if (plain.length > 4 + length) {
    await writeFile(tarFile, plain.subarray(4 + length));
    entries = await extractArchive(tarFile, options.srcDir);
    await rm(tarFile, { force: true });
  }
  for (const path of deleted) {
    if (!safeRelative(path)) throw new InputError('SVC_ERR_AGENT_OVERLAY_INVALID', `the overlay deletes ${JSON.stringify(path.slice(0, 200))}, a path outside the checkout; nothing more was applied`);
    await rm(join(options.srcDir, path), { force: true, recursive: true });
  }
  // The lock compiled from the overlaid tree: the workflow entries this run was matched against.
  for (const w of writes) {
    if (!safeRelative(w.path)) throw new InputError('SVC_ERR_AGENT_OVERLAY_INVALID', `the overlay writes ${JSON.stringify(w.path.slice(0, 200))}, a path outside the checkout; nothing more was applied`);
    await mkdir(dirname(join(options.srcDir, w.path)), { recursive: true });
    await writeFile(join(options.srcDir, w.path), w.text);
  }
  options.log(`working-tree overlay applied (${entries} archive entries, ${deleted.length} deleted file(s))`);
  return { files: entries, deleted: deleted.length };
}
