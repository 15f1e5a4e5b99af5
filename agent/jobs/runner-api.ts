// The step runner's `api.request`s, turned into orchestrator messages (spec "Agent and relay
// messages", "Cache flows"). Cache bytes move between the agent and storage directly through
// the pre-signed URLs the orchestrator hands out; the runner never sees those URLs.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import * as tar from 'tar';
import type { Static } from 'typebox';
import { InputError, SvcError, UnavailableError, messageOf } from '../../core/errors.ts';
import { receivedCode } from '../../core/error-codes.ts';
import type { OrchestratorToAgent } from '../../schemas/wire/agent.ts';
import { RunnerApiShapes } from '../../schemas/wire/runner.ts';
import { compileSchema, formatIssues } from '../../schemas/validate.ts';
import { downloadToFile, normalizeDigest, sha256File, uploadFile } from './download.ts';
import { extractArchive } from './extract.ts';
import { awaitStepApproval, type StepDecision } from './step-approval.ts';
import { downloadArtifact, uploadArtifact } from './artifacts.ts';
import { attestProvenance } from './attest.ts';
import { collectTests } from '../test-results/collect.ts';
import type { RunnerApiContext } from './runner-api-context.ts';
import { maskDeep } from '../logs/masker.ts';

export type { StepDecision };

export type { OrchestratorRequest, RunnerApiContext } from './runner-api-context.ts';

type Api = keyof typeof RunnerApiShapes;
const argChecks = Object.fromEntries(Object.entries(RunnerApiShapes).map(([api, shape]) => [api, compileSchema(shape.args)])) as {
  [K in Api]: ReturnType<typeof compileSchema<(typeof RunnerApiShapes)[K]['args']>>;
};
type Args<K extends Api> = Static<(typeof RunnerApiShapes)[K]['args']>;


function failed(response: OrchestratorToAgent): void {
  const error = (response as { error?: { code: string; message: string } }).error;
  if (error !== undefined) throw new SvcError(receivedCode(error.code), error.message);
}

/** A path the workflow named, inside the workspace, as a workspace-relative path. */
function insideWorkspace(workspace: string, path: string): string {
  const abs = isAbsolute(path) ? resolve(path) : resolve(workspace, path);
  const rel = relative(workspace, abs);
  if (rel === '' ) return '.';
  if (rel.startsWith('..') || isAbsolute(rel)) throw new InputError('SVC_ERR_AGENT_API_PATH', `path ${JSON.stringify(path)} is outside the job workspace`);
  return rel;
}

export async function handleRunnerApi(api: string, args: unknown, ctx: RunnerApiContext): Promise<unknown> {
  if (!(api in argChecks)) throw new InputError('SVC_ERR_AGENT_API_UNKNOWN', `unknown runner api ${JSON.stringify(api)}`);
  const checked = argChecks[api as Api].validate(args);
  if (!checked.ok) throw new InputError('SVC_ERR_AGENT_API_ARGS', `${api}: ${formatIssues(checked.issues)}`);
  switch (api as Api) {
    case 'emit': {
      const a = checked.value as Args<'emit'>;
      // The payload is stored with the event and handed to other runs: no released secret in it.
      const response = await ctx.request({ type: 'event.emit', jobId: ctx.jobId, requestId: randomUUID(), eventName: a.name, payload: maskDeep(a.payload ?? null, ctx.secrets) });
      failed(response);
      const deliveryId = (response as { deliveryId?: string }).deliveryId;
      return deliveryId === undefined ? {} : { deliveryId };
    }
    case 'oidc.token': {
      const a = checked.value as Args<'oidc.token'>;
      const response = (await ctx.request({ type: 'oidc.token.request', jobId: ctx.jobId, requestId: randomUUID(), audience: a.audience })) as {
        token?: string;
        expiresIn?: number;
        deferred?: true;
        code?: string;
      };
      if (typeof response.token === 'string' && response.token !== '') {
        // Masked before the runner (and so any step) can print it.
        ctx.secrets.add(response.token);
        return { token: response.token, expiresIn: response.expiresIn ?? 600 };
      }
      return { deferred: true, code: response.code ?? 'unavailable' };
    }
    case 'cache.restore': {
      const a = checked.value as Args<'cache.restore'>;
      for (const p of a.paths) insideWorkspace(ctx.workspace, p);
      const response = (await ctx.request({
        type: 'cache.user.restore.request',
        jobId: ctx.jobId,
        requestId: randomUUID(),
        key: a.key,
        ...(a.restoreKeys ? { restoreKeys: a.restoreKeys } : {}),
      })) as { hit: boolean; matchedKey?: string; downloadUrl?: string; tarHash?: string };
      failed(response as OrchestratorToAgent);
      if (!response.hit || response.downloadUrl === undefined) return { hit: false };
      const dir = await mkdtemp(join(ctx.scratch, 'cache-'));
      try {
        const file = join(dir, 'cache.tar.gz');
        const got = await downloadToFile(response.downloadUrl, file, { signal: ctx.signal });
        const expected = response.tarHash === undefined ? null : normalizeDigest(response.tarHash);
        if (expected !== null && expected !== got.sha256) {
          throw new UnavailableError('SVC_ERR_AGENT_CACHE_DIGEST', `cache entry ${JSON.stringify(response.matchedKey ?? a.key)} has digest ${got.sha256}, expected ${expected}; not restored`);
        }
        await extractArchive(file, ctx.workspace);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
      return response.matchedKey === undefined ? { hit: true } : { hit: true, matchedKey: response.matchedKey };
    }
    case 'cache.save': {
      const a = checked.value as Args<'cache.save'>;
      const rels = a.paths.map((p) => insideWorkspace(ctx.workspace, p));
      for (const rel of rels) {
        await stat(join(ctx.workspace, rel)).catch(() => {
          throw new InputError('SVC_ERR_AGENT_API_PATH', `cache path ${JSON.stringify(rel)} does not exist`);
        });
      }
      const requestId = randomUUID();
      const response = (await ctx.request({ type: 'cache.user.save.request', jobId: ctx.jobId, requestId, key: a.key })) as { uploadUrl?: string; skip: boolean };
      failed(response as OrchestratorToAgent);
      if (response.skip || response.uploadUrl === undefined) return { saved: false };
      const dir = await mkdtemp(join(ctx.scratch, 'cache-'));
      try {
        const file = join(dir, 'cache.tar.gz');
        await tar.c({ gzip: true, file, cwd: ctx.workspace, portable: true, noDirRecurse: false }, rels);
        const tarHash = await sha256File(file);
        const sizeBytes = (await stat(file)).size;
        await uploadFile(response.uploadUrl, file, { signal: ctx.signal });
        ctx.send({ type: 'cache.user.save.complete', jobId: ctx.jobId, requestId, key: a.key, tarHash, sizeBytes });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
      return { saved: true };
    }
    case 'artifacts.upload': {
      const a = checked.value as Args<'artifacts.upload'>;
      return uploadArtifact(ctx, a.name, a.paths, a.retentionDays === undefined ? {} : { retentionDays: a.retentionDays });
    }
    case 'artifacts.download': {
      const a = checked.value as Args<'artifacts.download'>;
      return downloadArtifact(ctx, a.name, a.destination, a.from === undefined ? {} : { from: a.from });
    }
    case 'step.approval': {
      const a = checked.value as Args<'step.approval'>;
      return awaitStepApproval(a.index, a.name, ctx);
    }
    case 'attest':
      return attestProvenance(checked.value as Args<'attest'>, ctx);
    case 'tests.collect':
      return collectTests(checked.value as Args<'tests.collect'>, ctx);
  }
  throw new InputError('SVC_ERR_AGENT_API_UNKNOWN', `unknown runner api ${JSON.stringify(api)}`);
}

export function apiError(error: unknown): { code: string; message: string } {
  return error instanceof SvcError ? { code: error.code, message: error.message } : { code: 'SVC_ERR_AGENT_API', message: messageOf(error) };
}
