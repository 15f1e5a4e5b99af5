// Step 13: content requirements (`requires`) of a matched trigger, read at the event's commit
// through the provider. Providers read files with an optional `readFile`; without it (or when a
// read fails) the candidate cannot be evaluated and is dropped with the reason.
import type { LockRequirement } from '../../../schemas/lock.ts';
import { evaluateRequirements, type RequirementResult } from '../../matching/index.ts';
import type { ProviderSource, RepositoryRef, SourceProviderExtensionPoint } from '../../host/extension-points/provider.ts';

/** The optional file reader a provider may offer next to `fetchLockFile`. */
export interface ProviderFileReader {
  readFile(request: { source: ProviderSource; repository: RepositoryRef; sha: string; path: string }): Promise<Uint8Array | string | null>;
}

export function fileReaderOf(provider: SourceProviderExtensionPoint): ProviderFileReader | null {
  const candidate = provider as SourceProviderExtensionPoint & Partial<ProviderFileReader>;
  return typeof candidate.readFile === 'function' ? (candidate as unknown as ProviderFileReader) : null;
}

export async function checkRequirements(
  requirements: readonly LockRequirement[],
  provider: SourceProviderExtensionPoint,
  source: ProviderSource,
  repository: RepositoryRef,
  sha: string | null,
): Promise<RequirementResult> {
  if (requirements.length === 0) return { ok: true };
  const reader = fileReaderOf(provider);
  if (sha === null) return { ok: false, reason: 'requirements cannot be evaluated: the event names no commit' };
  if (reader === null) return { ok: false, reason: `requirements cannot be evaluated: provider ${provider.providerKind} cannot read files` };
  return evaluateRequirements(requirements, async (path) => {
    const content = await reader.readFile({ source, repository, sha, path });
    if (content === null) return null;
    return typeof content === 'string' ? content : Buffer.from(content).toString('utf8');
  });
}
