// `GET /v1/orgs/:orgId/logs/search` on the relay and `GET /admin/v1/logs/search` on the
// orchestrator (docs/log-search.md): what `svc logs search`, the dashboard's search box and API
// clients send. `q` is checked by core/log-search.ts (a clear message for an empty or too short
// text), `since`/`until` too (ISO dates or ages such as 7d).
import { Type, type Static } from 'typebox';
import { LOG_SEARCH_CONTEXT_MAX, LOG_SEARCH_LIMIT_MAX, LogSearchRunStatus } from '../wire/relay-log-search.ts';

const Text = Type.String({ minLength: 1, maxLength: 300 });

export const LogSearchHttpQuery = Type.Object(
  {
    q: Type.Optional(Type.String({ maxLength: 1000 })),
    repository: Type.Optional(Text),
    branch: Type.Optional(Text),
    workflow: Type.Optional(Text),
    job: Type.Optional(Text),
    status: Type.Optional(LogSearchRunStatus),
    since: Type.Optional(Type.String({ maxLength: 100 })),
    until: Type.Optional(Type.String({ maxLength: 100 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LOG_SEARCH_LIMIT_MAX })),
    context: Type.Optional(Type.Integer({ minimum: 0, maximum: LOG_SEARCH_CONTEXT_MAX })),
  },
  { additionalProperties: false },
);
export type LogSearchHttpQuery = Static<typeof LogSearchHttpQuery>;

/** The admin API's form: the org is named in the query (an admin token is not bound to one org). */
export const AdminLogSearchQuery = Type.Object({ ...LogSearchHttpQuery.properties, org: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false });
export type AdminLogSearchQuery = Static<typeof AdminLogSearchQuery>;
