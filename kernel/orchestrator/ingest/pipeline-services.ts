// What the generic-source path (entry/generic.ts) uses of the pipeline: the shared caches and the
// record-keeping steps. Declared apart from the pipeline class so that the class can hand itself to
// that path without the two modules importing each other.
import type { PluginHost } from '../../../core/plugins/index.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { SourceCache } from '../sources/cache.ts';
import type { OpenedSource } from '../sources/store.ts';
import type { RunTarget } from './steps/create-runs.ts';
import type { RegistrationCache } from './steps/registrations.ts';
import type { DeliveryState, IngestOutcome } from './types.ts';

export interface PipelineServices {
  readonly deps: { readonly pool: DatabasePool; readonly host: PluginHost };
  readonly sources: SourceCache;
  readonly registrations: RegistrationCache;
  reject(state: DeliveryState, status: 'rejected_signature' | 'rejected_unknown_source' | 'rejected_misconfigured', message: string, sourceId: string | null): Promise<IngestOutcome>;
  dedup(state: DeliveryState, source: OpenedSource, windowSeconds?: number): Promise<IngestOutcome | null>;
  finishClaimed(state: DeliveryState, body: () => Promise<IngestOutcome>): Promise<IngestOutcome>;
  dispatch(state: DeliveryState, targets: readonly RunTarget[], status: IngestOutcome['status']): Promise<IngestOutcome>;
}
