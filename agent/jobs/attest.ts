// ctx.attestProvenance in a real job (docs/provenance.md). For each subject the agent hashes the
// workspace file itself (the step only names it), asks the orchestrator to attest it for this job
// (`attestation.create.request`), writes the signed bundle as `<artifact>.svc.json` next to the
// file and stores it as a run artifact of the same name (and its Sigstore bundle v0.3 form as
// `<artifact>.sigstore.json`). With no signing key ready the
// orchestrator freezes the statement instead and signs it later; the step learns the
// attestation id and statement hash so the bundle can be fetched once fulfilled.
import { randomUUID } from 'node:crypto';
import { stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, posix, sep } from 'node:path';
import type { Static } from 'typebox';
import { InputError, SvcError, isSvcError, messageOf } from '../../core/errors.ts';
import { receivedCode } from '../../core/error-codes.ts';
import type { AttestationCreateResponse } from '../../schemas/wire/agent.ts';
import type { RunnerApiShapes } from '../../schemas/wire/runner.ts';
import { sha256File } from './download.ts';
import { uploadArtifact, workspacePath } from './artifacts.ts';
import type { RunnerApiContext } from './runner-api-context.ts';

type AttestArgs = Static<(typeof RunnerApiShapes)['attest']['args']>;
type AttestResult = Static<(typeof RunnerApiShapes)['attest']['result']>;
type Attestation = NonNullable<AttestResult['attestations']>[number];
type Response = Static<typeof AttestationCreateResponse>;

/** The bundle file of a subject: `<artifact base name>.svc.json`. */
export function bundleNameOf(subjectPath: string): string {
  return `${basename(subjectPath)}.svc.json`;
}

/** The Sigstore bundle file of a subject: `<artifact base name>.sigstore.json`. */
export function sigstoreBundleNameOf(subjectPath: string): string {
  return `${basename(subjectPath)}.sigstore.json`;
}

async function subjectFile(ctx: RunnerApiContext, path: string): Promise<{ rel: string; abs: string; sha256: string }> {
  const rel = await workspacePath(ctx.workspace, path, true);
  const abs = join(ctx.workspace, rel);
  try {
    const info = await stat(abs);
    if (!info.isFile()) throw new Error(info.isDirectory() ? 'it is a directory (attest a file, for example a tarball of it)' : 'it is not a regular file');
    return { rel, abs, sha256: await sha256File(abs) };
  } catch (error) {
    throw new InputError('SVC_ERR_AGENT_ATTEST_SUBJECT', `ctx.attestProvenance: subject ${JSON.stringify(path)} is not a readable regular file in the job workspace: ${messageOf(error)}`);
  }
}

/** Keeps the caller's form: a relative subject gets a relative bundle path, an absolute one absolute. */
function bundlePathFor(subjectPath: string, fileName: string): string {
  const dir = dirname(subjectPath);
  return dir === '.' ? fileName : join(dir, fileName);
}

async function storeBundle(ctx: RunnerApiContext, name: string, relBundle: string): Promise<string | undefined> {
  try {
    await uploadArtifact(ctx, name, [relBundle]);
    return name;
  } catch (error) {
    // No storage on this orchestrator: the bundle stays in the workspace, and the result says so.
    if (isSvcError(error) && error.code === 'SVC_ERR_ARTIFACT_NOT_CONFIGURED') return undefined;
    throw error;
  }
}

export async function attestProvenance(args: AttestArgs, ctx: RunnerApiContext): Promise<AttestResult> {
  const names = new Map<string, string>();
  for (const subject of args.subjects) {
    const name = bundleNameOf(subject.path);
    const other = names.get(name);
    if (other !== undefined && other !== subject.path) {
      throw new InputError('SVC_ERR_AGENT_API_ARGS', `ctx.attestProvenance: subjects ${JSON.stringify(other)} and ${JSON.stringify(subject.path)} would both store bundle ${name}; attest them in separate jobs or rename one`);
    }
    names.set(name, subject.path);
  }
  const attestations: Attestation[] = [];
  for (const subject of args.subjects) {
    const file = await subjectFile(ctx, subject.path);
    const artifactName = file.rel.split(sep).join(posix.sep);
    const response = (await ctx.request({
      type: 'attestation.create.request',
      jobId: ctx.jobId,
      requestId: randomUUID(),
      artifact: { name: artifactName, sha256: file.sha256 },
      ...(args.predicate === undefined ? {} : { parameters: args.predicate }),
    })) as Response;
    if (response.error !== undefined) throw new SvcError(receivedCode(response.error.code), response.error.message);
    if (response.attestationId === undefined || response.statementHash === undefined) {
      throw new SvcError('SVC_ERR_AGENT_API', `the orchestrator answered the attestation of ${artifactName} without an attestation id`);
    }
    const base = { subject: artifactName, sha256: file.sha256, attestationId: response.attestationId, statementHash: response.statementHash };
    if (response.deferred === true || response.bundle === undefined) {
      attestations.push({ ...base, deferred: true, code: response.code ?? 'unavailable' });
      continue;
    }
    const fileName = bundleNameOf(file.rel);
    const absBundle = join(dirname(file.abs), fileName);
    await writeFile(absBundle, `${JSON.stringify(response.bundle, null, 2)}\n`);
    const relBundle = join(dirname(file.rel), fileName);
    const stored = await storeBundle(ctx, fileName, relBundle);
    const entry: Attestation = { ...base, deferred: false, bundlePath: bundlePathFor(subject.path, fileName), ...(stored === undefined ? {} : { artifact: stored }) };
    if (response.sigstoreBundle !== undefined) {
      // The same signature in the Sigstore bundle v0.3 form, for the ecosystem's verifiers.
      const sigstoreName = sigstoreBundleNameOf(file.rel);
      await writeFile(join(dirname(file.abs), sigstoreName), `${JSON.stringify(response.sigstoreBundle, null, 2)}\n`);
      const sigstoreStored = await storeBundle(ctx, sigstoreName, join(dirname(file.rel), sigstoreName));
      entry.sigstoreBundlePath = bundlePathFor(subject.path, sigstoreName);
      if (sigstoreStored !== undefined) entry.sigstoreArtifact = sigstoreStored;
    }
    attestations.push(entry);
  }
  return {
    bundlePaths: attestations.flatMap((a) => (a.bundlePath === undefined ? [] : [a.bundlePath])),
    deferred: attestations.some((a) => a.deferred),
    attestations,
  };
}
