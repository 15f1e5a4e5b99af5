// Step 6: the repository the event is about, as the provider addresses it (forge id, or the
// remote URL for plain git). Credentials stay with the source and are minted per use.
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import type { RepositoryRef } from '../../../../core/extension-points/provider.ts';

export function repositoryOf(event: NormalizedEvent): RepositoryRef | null {
  const repo = event.repository;
  if (repo === null) return null;
  const ref: RepositoryRef = { id: repo.id ?? repo.cloneUrl ?? repo.fullName, fullName: repo.fullName };
  if (repo.cloneUrl !== null) ref.cloneUrl = repo.cloneUrl;
  if (event.installationId !== null) ref.installationId = event.installationId;
  return ref;
}
