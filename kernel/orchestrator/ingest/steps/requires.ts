// Step 13: content requirements (`requires`) of a matched trigger, read at the event's commit
// through the provider's optional `readFile`; without it (or when a read fails) the candidate
// cannot be evaluated and is dropped with the reason.
import type { LockRequirement } from '../../../../schemas/lock.ts';
import { evaluateRequirements, type RequirementResult } from '../../../../workflow/matching/index.ts';
import type { ProviderSource, RepositoryRef, SourceProviderExtensionPoint } from '../../../../core/extension-points/provider.ts';

export async function checkRequirements(
  requirements: readonly LockRequirement[],
  provider: SourceProviderExtensionPoint,
  source: ProviderSource,
  repository: RepositoryRef,
  sha: string | null,
): Promise<RequirementResult> {
  if (requirements.length === 0) return { ok: true };
  if (sha === null) return { ok: false, reason: 'requirements cannot be evaluated: the event names no commit' };
  const readFile = provider.readFile?.bind(provider);
  if (readFile === undefined) return { ok: false, reason: `requirements cannot be evaluated: provider ${provider.providerKind} cannot read files` };
  return evaluateRequirements(requirements, async (path) => {
    const content = await readFile({ source, repository, sha, path });
    return content === null ? null : Buffer.from(content.buffer, content.byteOffset, content.byteLength).toString('utf8');
  });
}
