// Run artifacts on the agent (ctx.artifacts, docs/artifacts.md). The agent packs the named
// workspace paths into one gzipped tarball, hashes it (sha256, the artifact's content address),
// PUTs it to the pre-signed URL the orchestrator hands out and then commits it. A download
// fetches through a pre-signed GET, checks the digest the orchestrator recorded before anything
// is unpacked, and extracts with the hostile-archive checks of extract.ts. Also the entry point
// other agent code uses to store a workspace file as an artifact (provenance bundles).
import { randomUUID } from 'node:crypto';
import { mkdtemp, realpath, rm, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import * as tar from 'tar';
import { checkArtifactName } from '../../core/artifact-names.ts';
import { InputError, SvcError } from '../../core/errors.ts';
import { receivedCode } from '../../core/error-codes.ts';
import type { ArtifactInfo } from '../../schemas/wire/agent.ts';
import { DigestMismatchError, downloadToFile, normalizeDigest, sha256File, uploadFile } from './download.ts';
import { extractArchive, scanArchive } from './extract.ts';
import type { RunnerApiContext } from './runner-api-context.ts';

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

/**
 * `path` as a workspace-relative path, refusing anything that leaves the workspace: `..`,
 * absolute paths elsewhere, and symlinks (in the path or its parents) that resolve outside.
 * `mustExist`: the path itself must exist (uploads); otherwise its nearest existing parent is checked.
 */
export async function workspacePath(workspace: string, path: string, mustExist: boolean): Promise<string> {
  if (typeof path !== 'string' || path === '' || path.includes('\0')) throw new InputError('SVC_ERR_AGENT_API_PATH', 'paths must be non-empty strings without NUL bytes');
  const root = await realpath(workspace);
  const abs = isAbsolute(path) ? resolve(path) : resolve(workspace, path);
  const lexical = relative(resolve(workspace), abs);
  if (lexical.startsWith('..') || isAbsolute(lexical)) throw outside(path, '');
  let probe = abs;
  for (;;) {
    try {
      const real = await realpath(probe);
      if (real !== root && !real.startsWith(root + sep)) throw outside(path, ' (a symlink leads out of it)');
      break;
    } catch (error) {
      if (error instanceof InputError) throw error;
      if (mustExist && probe === abs) throw new InputError('SVC_ERR_AGENT_API_PATH', `artifact path ${JSON.stringify(path.slice(0, 200))} does not exist`);
      const parent = resolve(probe, '..');
      if (parent === probe) throw outside(path, '');
      probe = parent;
    }
  }
  return lexical === '' ? '.' : lexical;
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
  const rels: string[] = [];
  for (const p of paths) rels.push(await workspacePath(ctx.workspace, p, true));
  const dir = await mkdtemp(join(ctx.scratch, 'artifact-'));
  try {
    const file = join(dir, 'artifact.tar.gz');
    // Symlinks are stored as links (never followed), so a link cannot pull outside files in;
    // extraction refuses links that point out of the destination.
    await tar.c({ gzip: true, file, cwd: ctx.workspace, portable: true, follow: false }, [...new Set(rels)]);
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
 * (workspace-relative or absolute inside the workspace; default the workspace root).
 */
export async function downloadArtifact(ctx: ArtifactContext, name: string, dest?: string, options: { from?: 'current' | 'upstream' } = {}): Promise<ArtifactDownloadResult> {
  checkArtifactName(name);
  const target = resolve(ctx.workspace, await workspacePath(ctx.workspace, dest ?? '.', false));
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
