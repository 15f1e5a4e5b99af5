// A stored internal event as the matching engine sees it: a NormalizedEvent of the trigger family
// its name belongs to, plus the internal fields completion triggers filter on.
//
//   custom name            type `event`, customEventName = name, event_name `event:<name>`
//   workflow_complete      type `workflow_complete` (workflows_failed_batch too, when failed)
//   job_complete           type `job_complete`
//   registration.updated   type `lifecycle`, customEventName `registration.updated`
//   __schedule_fire        type `schedule`, customEventName `<workflow>#<trigger index>`, event_name `schedule`
import type { NormalizedEvent } from '../../../schemas/event.ts';
import type { InternalEventFields } from '../../../workflow/matching/index.ts';
import type { LeasedEvent } from './delivery-store.ts';

export const SCHEDULE_FIRE_EVENT = '__schedule_fire';
const LIFECYCLE_EVENTS: ReadonlySet<string> = new Set([
  'registration.updated',
  'repository.created',
  'repository.archived',
  'repository.deleted',
  'installation.created',
  'installation.deleted',
]);

const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

function repositoryOf(fullName: string | null): NormalizedEvent['repository'] {
  if (fullName === null || !fullName.includes('/')) return null;
  const [owner, ...rest] = fullName.split('/');
  return { fullName, owner: owner!, name: rest.join('/'), id: null, cloneUrl: null, defaultBranch: null };
}

export function eventFor(leased: LeasedEvent, emitterRepository: string | null): { event: NormalizedEvent; internal: InternalEventFields } {
  const payload = (leased.payload !== null && typeof leased.payload === 'object' ? leased.payload : {}) as Record<string, unknown>;
  const base: NormalizedEvent = {
    provider: 'svc',
    type: 'event',
    providerEvent: leased.name,
    action: null,
    eventName: `event:${leased.name}`,
    repository: repositoryOf(emitterRepository ?? str(payload['repository'])),
    ref: null,
    branch: null,
    tag: null,
    sha: str(payload['sha']),
    beforeSha: null,
    deleted: false,
    sender: { login: 'svc', id: null },
    commitMessage: null,
    changedFiles: null,
    pullRequest: null,
    comment: null,
    installationId: null,
    customEventName: leased.name,
    payload: leased.payload,
  };
  if (leased.name === 'workflow_complete' || leased.name === 'job_complete') {
    return {
      event: { ...base, type: leased.name, eventName: leased.name, customEventName: null },
      internal: { workflow: str(payload['workflow']), job: str(payload['job']), status: str(payload['status']) },
    };
  }
  if (leased.name === SCHEDULE_FIRE_EVENT) {
    return { event: { ...base, type: 'schedule', eventName: 'schedule', customEventName: `${str(payload['workflow']) ?? ''}#${Number(payload['triggerIndex'] ?? -1)}` }, internal: {} };
  }
  if (leased.source === 'orchestrator' && LIFECYCLE_EVENTS.has(leased.name)) {
    return { event: { ...base, type: 'lifecycle', eventName: leased.name }, internal: {} };
  }
  return { event: base, internal: {} };
}
