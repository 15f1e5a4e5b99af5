// The columns that say which run a `runs` row is — what it acted on and what started it — shared
// by every schema that reads run rows (run detail, run lists, re-runs), so they cannot drift.
import { Type, type TSchema } from 'typebox';

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const RUN_IDENTITY_COLUMNS = {
  id: Type.String(),
  org_id: Type.String(),
  delivery_id: Nullable(Type.String()),
  source_id: Nullable(Type.String()),
  provider: Type.String(),
  repository: Type.String(),
  workflow_repository: Type.String(),
  workflow: Type.String(),
  workflow_sha: Type.String(),
  workflow_ref: Nullable(Type.String()),
  sha: Type.String(),
  ref: Nullable(Type.String()),
  event_name: Type.String(),
};
