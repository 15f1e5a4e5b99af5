// Step 11: changed files, fetched only when a candidate workflow's decision depends on them
// (path filters the event does not already settle). A failed fetch leaves those filters
// indeterminate, naming why, rather than guessing.
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import type { Lock } from '../../../../schemas/lock.ts';
import { lockMessageRegexes, workflowsNeedChangedFiles } from '../../../../workflow/matching/index.ts';
import type { ProviderSource, RepositoryRef, SourceProviderExtensionPoint } from '../../../../core/extension-points/provider.ts';
import { messageOf } from '../../../../core/errors.ts';
import { messageRegexResults, type MessageRegexOptions } from './message-regex.ts';

export type ChangedFiles =
  | { needed: false }
  | { needed: true; files: string[]; workflows: string[] }
  | { needed: true; unavailable: string; workflows: string[] };

export async function changedFilesFor(
  provider: SourceProviderExtensionPoint,
  source: ProviderSource,
  repository: RepositoryRef,
  event: NormalizedEvent,
  lock: Lock,
  regexOptions: MessageRegexOptions = {},
): Promise<ChangedFiles> {
  // The probe tests commit-message filters too: their expressions run off the event loop first.
  const regexResults = await messageRegexResults(event, lockMessageRegexes(lock, event), regexOptions);
  const workflows = workflowsNeedChangedFiles(lock, event, { lockRepository: repository.fullName, regexResults });
  if (workflows.length === 0) return { needed: false };
  const head = event.pullRequest?.headSha ?? event.sha;
  const base = event.pullRequest?.baseSha ?? event.beforeSha;
  if (!head || !base || /^0+$/.test(base)) return { needed: true, unavailable: 'the event names no base commit to compare with', workflows };
  try {
    return { needed: true, files: await provider.changedFiles({ source, repository, base, head }), workflows };
  } catch (error) {
    return { needed: true, unavailable: `changed files could not be fetched: ${messageOf(error)}`, workflows };
  }
}
