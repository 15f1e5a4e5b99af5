// The download link of a run's attestation bundle (`<artifact>.svc.json`), relayed as
// `run.attestation.request` to an orchestrator of the org (kernel/orchestrator/runs/api/attestations.ts):
//   GET /ui/orgs/:orgId/runs/:runId/attestations/:attestationId → the bundle as a JSON attachment
// The bundle is what the agent wrote next to the file: it verifies with `svc verify-attestation`.
import contentDisposition from 'content-disposition';
import { InputError } from '../../../../core/errors.ts';
import type { SvcHttpServer } from '../../../services/http/index.ts';
import { runIdOf, uiCaller, uiFailed, UiRelayedError, unwrapAnswer, type UiOptions } from './common.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function registerAttestationDownload(app: SvcHttpServer, options: UiOptions): void {
  const { db, broker, logger } = options;
  app.get('/ui/orgs/:orgId/runs/:runId/attestations/:attestationId', async (request, reply) => {
    try {
      const { orgId } = await uiCaller(db, request);
      const runId = runIdOf(request);
      const { attestationId } = request.params as { attestationId: string };
      if (!UUID.test(attestationId)) throw new InputError('SVC_ERR_RELAY_ATTESTATION_ID_INVALID', `"${attestationId.slice(0, 80)}" is not an attestation id (a UUID)`);
      const answer = unwrapAnswer(await broker.request(orgId, { type: 'run.attestation.request', orgId, runId, attestationId: attestationId.toLowerCase() }));
      if (answer.attestation === undefined) throw new UiRelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without the bundle', status: 502 });
      return reply
        .code(200)
        .type('application/json; charset=utf-8')
        .header('content-disposition', contentDisposition(answer.attestation.fileName))
        .header('cache-control', 'no-store')
        .header('x-content-type-options', 'nosniff')
        .send(`${JSON.stringify(answer.attestation.bundle, null, 2)}\n`);
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });
}
