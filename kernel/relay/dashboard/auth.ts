// Who is calling a dashboard or CLI route: `Authorization: Bearer <token>` with a personal access
// token (`svcpat_…`, scoped to one org) or the org's platform token. Missing or unknown → 401;
// a token of another org than the path's → 403.
import type { FastifyRequest } from 'fastify';
import type { DatabasePool } from '../../services/db/index.ts';
import { AuthenticationError, NotAllowedError } from '../../../core/errors.ts';
import { orgForToken } from '../orgs.ts';
import { PAT_PREFIX, patForToken } from '../pats/index.ts';

export interface Caller {
  kind: 'pat' | 'platform';
  orgId: string;
  /** Recorded as `triggered_by` / `cancelled_by`: the PAT's user, or `platform-token`. */
  actor: string;
  patId?: string;
}

export function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  return /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
}

/** The caller of a request, whatever org it names. */
export async function identify(db: DatabasePool, request: FastifyRequest): Promise<Caller> {
  const token = bearerOf(request);
  if (token === undefined) {
    throw new AuthenticationError('SVC_ERR_RELAY_AUTH_MISSING', 'send a personal access token as "Authorization: Bearer <token>" (svc login --token <PAT>)');
  }
  if (token.startsWith(PAT_PREFIX)) {
    const pat = await patForToken(db, token);
    if (pat !== undefined) return { kind: 'pat', orgId: pat.orgId, actor: pat.user, patId: pat.id };
  } else {
    const orgId = await orgForToken(db, token);
    if (orgId !== undefined) return { kind: 'platform', orgId, actor: 'platform-token' };
  }
  throw new AuthenticationError('SVC_ERR_RELAY_AUTH_INVALID', 'the token is not valid (revoked, rotated or mistyped); ask an operator for a new one ("svc-admin relay pat create")');
}

/** The caller, who must belong to `orgId`. */
export async function authorize(db: DatabasePool, request: FastifyRequest, orgId: string): Promise<Caller> {
  const caller = await identify(db, request);
  if (caller.orgId !== orgId) {
    throw new NotAllowedError('SVC_ERR_RELAY_AUTH_WRONG_ORG', `this token belongs to org ${caller.orgId}, not ${orgId}; use "svc org use ${caller.orgId}" or a token of ${orgId}`);
  }
  return caller;
}
