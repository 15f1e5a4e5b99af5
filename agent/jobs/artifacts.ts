// Run artifacts on the agent (ctx.artifacts, docs/artifacts.md). The agent packs the named
// job paths (workspace, ctx.mktemp) into one gzipped tarball, hashes it (sha256, the artifact's content address),
// PUTs it to the pre-signed URL the orchestrator hands out and then commits it. A download
// fetches through a pre-signed GET, checks the digest the orchestrator recorded before anything
// is unpacked, and extracts with the hostile-archive checks of extract.ts. Also the entry point
// other agent code uses to store a workspace file as an artifact (provenance bundles).
import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdtemp, realpath, rm, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import * as tar from 'tar';
import { checkArtifactName } from '../../core/artifact-names.ts';
import { InputError, SvcError } from '../../core/errors.ts';
import { receivedCode } from '../../core/error-codes.ts';
import type { ArtifactInfo } from '../../schemas/wire/agent.ts';
import { DigestMismatchError, downloadToFile, normalizeDigest, sha256File, uploadFile } from './download.ts';
import { extractArchive, scanArchive } from './extract.ts';
import type { RunnerApiContext } from './runner-api-context.ts';
import { ownedTempEntry } from '../runner/temp-paths.ts';

export interface ArtifactUploadResult {
  name: string;
  /** `sha256:<hex>` of the stored tarball. */
  digest: string;
  sizeBytes: number;
  fileCount: number;
}

export interface ArtifactDownloadResult {
  /** Absolute directory the artifact was extracted into. */
  path: string;
  digest: string;
  fileCount: number;
}

type ArtifactContext = Pick<RunnerApiContext, 'jobId' | 'workspace' | 'scratch' | 'request' | 'signal'>;

function failed(response: { error?: { code: string; message: string } }): void {
  if (response.error !== undefined) throw new SvcError(receivedCode(response.error.code), response.error.message);
}

function outside(path: string, why: string): InputError {
  return new InputError('SVC_ERR_AGENT_API_PATH', `path ${JSON.stringify(path.slice(0, 200))} is outside the job workspace${why}`);
}

/** Paths must be non-empty strings without NUL bytes. */
function checkPathString(path: string): void {
  if (typeof path !== 'string' || path === '' || path.includes('\0')) throw new InputError('SVC_ERR_AGENT_API_PATH', 'paths must be non-empty strings without NUL bytes');
}

const escapes = (rel: string): boolean => rel.startsWith('..') || isAbsolute(rel);

/**
 * Refuses `abs` (lexically under `root`) when it, or its nearest existing parent, resolves
 * outside `root` through a symlink. `mustExist`: the path itself must exist (uploads).
 */
async function confined(root: string, abs: string, path: string, mustExist: boolean): Promise<void> {
  const realRoot = await realpath(root);
  let probe = abs;
  for (;;) {
    try {
      const real = await realpath(probe);
      if (real !== realRoot && !real.startsWith(realRoot + sep)) throw outside(path, ' (a symlink leads out of it)');
      return;
    } catch (error) {
      if (error instanceof InputError) throw error;
      if (mustExist && probe === abs) throw new InputError('SVC_ERR_AGENT_API_PATH', `artifact path ${JSON.stringify(path.slice(0, 200))} does not exist`);
      const parent = resolve(probe, '..');
      if (parent === probe) throw outside(path, '');
      probe = parent;
    }
  }
}

/**
 * `path` as a workspace-relative path, refusing anything that leaves the workspace: `..`,
 * absolute paths elsewhere, and symlinks (in the path or its parents) that resolve outside.
 * `mustExist`: the path itself must exist (uploads); otherwise its nearest existing parent is checked.
 */
export async function workspacePath(workspace: string, path: string, mustExist: boolean): Promise<string> {
  checkPathString(path);
  const abs = isAbsolute(path) ? resolve(path) : resolve(workspace, path);
  const lexical = relative(resolve(workspace), abs);
  if (escapes(lexical)) throw outside(path, '');
  await confined(workspace, abs, path, mustExist);
  return lexical === '' ? '.' : lexical;
}

/** A path the job owns: `rel` (archive name) under `root` (absolute). */
export interface JobPath {
  root: string;
  rel: string;
}

/**
 * `path` when the job owns it: inside the workspace (relative paths are the workspace's), or
 * inside a directory ctx.mktemp made, or a file ctx.mktempFile made, for this job (under its
 * scratch directory, agent/runner/temp-paths.ts). Everything else is refused as workspacePath
 * refuses it; a mktemp entry that was replaced by a symlink is refused too. A mktemp
 * directory's contents are archived relative to it; a mktempFile file under its own name.
 */
export async function jobPath(ctx: Pick<ArtifactContext, 'workspace' | 'scratch'>, path: string, mustExist: boolean): Promise<JobPath> {
  checkPathString(path);
  const abs = isAbsolute(path) ? resolve(path) : resolve(ctx.workspace, path);
  if (!escapes(relative(resolve(ctx.workspace), abs))) return { root: resolve(ctx.workspace), rel: await workspacePath(ctx.workspace, path, mustExist) };
  const scratch = resolve(ctx.scratch);
  const owned = ownedTempEntry(relative(scratch, abs));
  if (owned === undefined) throw outside(path, ' or the directories ctx.mktemp made for this job');
  const entry = join(scratch, owned.entry);
  let info;
  try {
    // The entry itself must still be what the runner made: no symlink anywhere up to scratch.
    if ((await realpath(entry)) !== join(await realpath(scratch), owned.entry)) throw outside(path, ' (a symlink leads out of it)');
    info = await lstat(entry);
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError('SVC_ERR_AGENT_API_PATH', `path ${JSON.stringify(path.slice(0, 200))}: ${owned.entry} was not made by ctx.mktemp or ctx.mktempFile of this job, or is gone`);
  }
  if (owned.kind === 'file') {
    if (!info.isFile()) throw outside(path, ' (the ctx.mktempFile file was replaced)');
    return { root: dirname(entry), rel: basename(entry) };
  }
  if (!info.isDirectory()) throw outside(path, ' (the ctx.mktemp directory was replaced)');
  await confined(entry, abs, path, mustExist);
  const rel = relative(entry, abs);
  return { root: entry, rel: rel === '' ? '.' : rel };
}

/** Packs `paths` (grouped by the root they belong to) into one gzipped tarball `file`. */
async function pack(dir: string, paths: readonly JobPath[], file: string): Promise<void> {
  const byRoot = new Map<string, Set<string>>();
  for (const p of paths) byRoot.set(p.root, (byRoot.get(p.root) ?? new Set()).add(p.rel));
  const plain = join(dir, 'artifact.tar');
  let first = true;
  for (const [cwd, rels] of byRoot) {
    // Symlinks are stored as links (never followed), so a link cannot pull outside files in;
    // extraction refuses links that point out of the destination.
    const options = { file: plain, cwd, portable: true, follow: false };
    if (first) await tar.c(options, [...rels]);
    else await tar.r(options, [...rels]);
    first = false;
  }
  await pipeline(createReadStream(plain), createGzip(), createWriteStream(file));
  await rm(plain, { force: true });
}

async function countEntries(file: string): Promise<number> {
  let files = 0;
  await tar.t({
    file,
    onReadEntry(entry) {
      if (entry.type !== 'Directory') files += 1;
      entry.resume();
    },
  });
  return files;
}

/** Packs, uploads and commits artifact `name` of the job's run (see /work/briefs/artifacts-api.md). */
export async function uploadArtifact(ctx: ArtifactContext, name: string, paths: readonly string[], options: { retentionDays?: number } = {}): Promise<ArtifactUploadResult> {
  checkArtifactName(name);
  if (!Array.isArray(paths) || paths.length === 0) throw new InputError('SVC_ERR_AGENT_API_PATH', `artifact ${JSON.stringify(name)}: name at least one path to upload`);
  if (options.retentionDays !== undefined && (!Number.isInteger(options.retentionDays) || options.retentionDays < 1)) {
    throw new InputError('SVC_ERR_AGENT_API_ARGS', `artifact ${JSON.stringify(name)}: retentionDays must be a whole number of days, 1 or more`);
  }
  const owned: JobPath[] = [];
  for (const p of paths) owned.push(await jobPath(ctx, p, true));
  const dir = await mkdtemp(join(ctx.scratch, 'artifact-'));
  try {
    const file = join(dir, 'artifact.tar.gz');
    await pack(dir, owned, file);
    // What a download would refuse (a link pointing out of the tree) is refused here already.
    await scanArchive(file);
    const digest = `sha256:${await sha256File(file)}`;
    const sizeBytes = (await stat(file)).size;
    const fileCount = await countEntries(file);
    const requestId = randomUUID();
    const upload = (await ctx.request({
      type: 'artifact.upload.request',
      jobId: ctx.jobId,
      requestId,
      name,
      digest,
      sizeBytes,
      fileCount,
      ...(options.retentionDays === undefined ? {} : { retentionDays: options.retentionDays }),
    })) as { uploadUrl?: string; error?: { code: string; message: string } };
    failed(upload);
    if (upload.uploadUrl === undefined) throw new SvcError('SVC_ERR_AGENT_ARTIFACT_PROTOCOL', `the orchestrator answered the upload of artifact ${JSON.stringify(name)} without a URL`);
    await uploadFile(upload.uploadUrl, file, { signal: ctx.signal });
    const commit = (await ctx.request({ type: 'artifact.commit.request', jobId: ctx.jobId, requestId })) as { artifact?: ArtifactInfo; error?: { code: string; message: string } };
    failed(commit);
    if (commit.artifact === undefined) throw new SvcError('SVC_ERR_AGENT_ARTIFACT_PROTOCOL', `the orchestrator answered the commit of artifact ${JSON.stringify(name)} without the artifact`);
    return { name, digest: commit.artifact.digest, sizeBytes: commit.artifact.sizeBytes, fileCount: commit.artifact.fileCount };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Fetches artifact `name` (of this run, or with `from: 'upstream'` of the run whose completion
 * triggered this one; by default this run first, then upstream) and extracts it into `dest`
 * (workspace-relative, or absolute inside the workspace or a ctx.mktemp directory; default the
 * workspace root).
 */
export async function downloadArtifact(ctx: ArtifactContext, name: string, dest?: string, options: { from?: 'current' | 'upstream' } = {}): Promise<ArtifactDownloadResult> {
  checkArtifactName(name);
  const owned = await jobPath(ctx, dest ?? '.', false);
  const target = resolve(owned.root, owned.rel);
  const existing = await stat(target).catch(() => undefined);
  if (existing !== undefined && !existing.isDirectory()) throw new InputError('SVC_ERR_AGENT_API_PATH', `artifact ${JSON.stringify(name)}: destination ${JSON.stringify(dest)} is not a directory`);
  const response = (await ctx.request({
    type: 'artifact.download.request',
    jobId: ctx.jobId,
    requestId: randomUUID(),
    name,
    ...(options.from === undefined ? {} : { from: options.from }),
  })) as { artifact?: ArtifactInfo; downloadUrl?: string; error?: { code: string; message: string } };
  failed(response);
  const { artifact, downloadUrl } = response;
  if (artifact === undefined || downloadUrl === undefined) throw new SvcError('SVC_ERR_AGENT_ARTIFACT_PROTOCOL', `the orchestrator answered the download of artifact ${JSON.stringify(name)} without a URL`);
  const expected = normalizeDigest(artifact.digest);
  if (expected === null) throw new SvcError('SVC_ERR_AGENT_ARTIFACT_PROTOCOL', `artifact ${JSON.stringify(name)} has no sha256 digest recorded`);
  const dir = await mkdtemp(join(ctx.scratch, 'artifact-'));
  try {
    const file = join(dir, 'artifact.tar.gz');
    const got = await downloadToFile(downloadUrl, file, { signal: ctx.signal });
    if (got.sha256 !== expected) {
      throw new DigestMismatchError(
        'SVC_ERR_AGENT_ARTIFACT_DIGEST',
        `artifact ${JSON.stringify(name)} of run ${artifact.runId} downloaded with digest sha256:${got.sha256}, but sha256:${expected} was stored; the stored object was altered or damaged, nothing was extracted`,
      );
    }
    await extractArchive(file, target);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return { path: target, digest: artifact.digest, fileCount: artifact.fileCount };
}
