// `svc-admin attestations backfill [--limit n]`: sign frozen statements now, from the operator's
// machine, with origin `offline-backfill` (spec "Identity token": attestation_origin). For when no
// orchestrator can sign them (a node down, a signer outage over); db custody signs here with the
// key table and the master key, exactly as a node would. The tokens bound to them carry
// `statement_hash`, so a backfilled bundle verifies like a deferred one.
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError, UnavailableError } from '../../../core/errors.ts';
import { createIdentityService } from '../../../kernel/orchestrator/identity/service.ts';
import { timestamperFromConfig } from '../../../kernel/orchestrator/identity/timestamp.ts';
import type { FulfilResult } from '../../../kernel/orchestrator/identity/attestations.ts';
import { adminConfig, adminMasterKeys, databaseFlag, databaseUrlOf, dbCustodyFor, quietLogger, withDatabase } from '../signing-key/shared.ts';

/** Recorded as orchestrator_id when a frozen statement does not name the node that ran its job. */
export const BACKFILL_SIGNER_ID = 'svc-admin';

export default class AttestationsBackfill extends SvcCommand {
  static override description = 'Sign pending provenance statements now (origin offline-backfill; db custody)';
  static override examples = ['<%= config.bin %> attestations backfill', '<%= config.bin %> attestations backfill --limit 10 --json'];
  static override flags = {
    ...databaseFlag,
    limit: Flags.integer({ description: 'sign at most this many (1 to 1000)', default: 100, min: 1, max: 1000 }),
  };

  async run(): Promise<FulfilResult> {
    const { flags } = await this.parse(AttestationsBackfill);
    const config = await adminConfig();
    const issuer = config.orchestrator.provenanceIssuer;
    if (!issuer) throw new InputError(USAGE_ERROR_CODE, 'set SVC_ORCHESTRATOR_PROVENANCE_ISSUER to the orchestrators\' issuer: backfilled bundles name it and verify against it');
    const keys = await adminMasterKeys(config);
    // The same TSA the nodes use, when configured: backfilled signatures get timestamps too.
    const timestamper = await timestamperFromConfig(config.orchestrator);
    const result = await withDatabase(databaseUrlOf(config, flags['database-url']), async (pool) => {
      const custody = dbCustodyFor(config, pool, keys);
      // No waiting for a key here: an operator wants the answer now.
      const service = createIdentityService({
        pool,
        custody,
        custodyKind: 'db',
        issuer,
        orchestratorId: BACKFILL_SIGNER_ID,
        logger: quietLogger,
        keyWaitMs: 0,
        ...(timestamper === undefined ? {} : { timestamper }),
      });
      return service.fulfilDeferredAttestations({ origin: 'offline-backfill', limit: flags.limit });
    });
    if (result.deferredCode !== undefined && result.fulfilled === 0) {
      throw new UnavailableError(
        'SVC_ERR_IDENTITY_BACKFILL_NO_KEY',
        `no statement was signed (${result.deferredCode}): there is no usable active signing key; create one with "svc-admin signing-key generate" and run this again (${result.remaining} pending)`,
      );
    }
    this.log(`Signed ${result.fulfilled} pending attestation(s) (offline-backfill); ${result.remaining} still pending.`);
    return result;
  }
}
