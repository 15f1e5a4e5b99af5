// `GET /trust-policy?org=<org>` and `PATCH /trust-policy` (docs/trust-policy.md). The org is
// named by `?org=` or by `org` in the PATCH body (both: they must agree). The PATCH body is
// strict: a removed policy field (removed.ts) or an unknown one is a 400, and nothing is written.
import type { FastifyInstance } from 'fastify';
import type { AdminAuth } from '../admin-auth/require-scope.ts';
import { actorOf } from '../cluster/settings-routes.ts';
import { TrustPolicyPatch, TrustPolicyPatchQuery, TrustPolicyQuery } from '../../../schemas/http/settings.ts';
import { InputError } from '../../../core/errors.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { refuseRemovedPolicyFields } from './removed.ts';
import { getTrustPolicy, patchTrustPolicy } from './store.ts';

export function trustPolicyRoutes(options: {
  pool: DatabasePool;
  nodeId: string;
  /** Reading needs scope `config.read`, changing `trust-policy.write`. */
  auth: AdminAuth;
}) {
  const { auth } = options;
  return async function routes(app: FastifyInstance): Promise<void> {
    app.get('/trust-policy', { onRequest: auth.requireScope('config.read'), schema: { querystring: TrustPolicyQuery } }, async (request) => {
      return getTrustPolicy(options.pool, (request.query as { org: string }).org);
    });
    app.patch(
      '/trust-policy',
      {
        onRequest: auth.requireScope('trust-policy.write'),
        preValidation: async (request) => refuseRemovedPolicyFields(request.body),
        schema: { body: TrustPolicyPatch, querystring: TrustPolicyPatchQuery },
      },
      async (request) => {
        const { org: bodyOrg, ...patch } = request.body as TrustPolicyPatch;
        const queryOrg = (request.query as { org?: string }).org;
        if (bodyOrg !== undefined && queryOrg !== undefined && bodyOrg !== queryOrg) {
          throw new InputError('SVC_ERR_TRUST_POLICY_ORG', `the body names org "${bodyOrg}" and the query org "${queryOrg}": name one org; nothing was changed`);
        }
        const org = bodyOrg ?? queryOrg;
        if (org === undefined) throw new InputError('SVC_ERR_TRUST_POLICY_ORG', 'name the org: ?org=<org> or "org" in the body; nothing was changed');
        if (Object.keys(patch).length === 0) throw new InputError('SVC_ERR_TRUST_POLICY_EMPTY', 'the body changes nothing: give forkPolicy (run, ignore, or null to clear)');
        return patchTrustPolicy(options.pool, org, patch, `${actorOf(auth, request)} via node ${options.nodeId}`);
      },
    );
  };
}
