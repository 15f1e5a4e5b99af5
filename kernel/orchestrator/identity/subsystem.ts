// The identity subsystem at boot (sealed keys were already self-healed and checked with every
// other sealed store before subsystems start: sealed-stores.ts): bind the custody plugin to the key
// table, make sure a key exists, mount the issuer routes, and sweep deferred attestations.
// Provides the identity service (undefined when provenance signing is off).
import type { CustodyKind } from '../../../schemas/identity.ts';
import { messageOf } from '../../../core/errors.ts';
import { provide } from '../../../core/wiring/index.ts';
import type { Subsystem } from '../context.ts';
import { adminAuthRef, identityServiceRef } from '../service-refs.ts';
import { createKeyVault, registerExternalKey } from './key-store.ts';
import { registerIdentityRoutes, registerSigningKeyAdminRoute } from './routes.ts';
import { createIdentityService, type IdentityService } from './service.ts';
import { timestamperFromConfig } from './timestamp.ts';

export const FULFIL_SWEEP_MS = 30_000;

export const identitySubsystem: Subsystem = {
  id: 'identity',
  provides: [identityServiceRef],
  needs: [adminAuthRef],
  async start(ctx, deps) {
    const logger = ctx.logger.child({ subsystem: 'identity' });
    await registerSigningKeyAdminRoute(ctx.http, ctx.db, deps.get(adminAuthRef));

    const issuer = ctx.config.orchestrator.provenanceIssuer;
    if (!issuer) {
      logger.info('SVC_ORCHESTRATOR_PROVENANCE_ISSUER is not set: identity tokens and attestations are off');
      return [provide(identityServiceRef, undefined)];
    }
    const custodyKind = ctx.config.orchestrator.signerKind as CustodyKind;
    const custody = ctx.host.select('custody', custodyKind);
    custody.bind?.(createKeyVault(ctx.db, ctx.masterKeys, custodyKind));
    if (custodyKind === 'db') {
      const key = await custody.generate?.();
      if (key?.created) logger.info({ kid: key.kid }, 'generated the first signing key');
    } else {
      try {
        const kid = await custody.keyId();
        const status = await registerExternalKey(ctx.db, custodyKind, kid, await custody.getPublicJwk());
        if (status === 'revoked') logger.error({ kid }, `the ${custodyKind} signing key is revoked: tokens will be deferred until a new key is configured`);
      } catch (error) {
        // A signer outage must not stop the orchestrator: mint defers until it answers.
        logger.error({ err: error }, `the ${custodyKind} signer did not answer at start: ${messageOf(error)}`);
      }
    }

    const timestamper = await timestamperFromConfig(ctx.config.orchestrator);
    if (timestamper) logger.info({ tsa: timestamper.url }, 'attestation signatures get RFC 3161 timestamps');
    const service: IdentityService = createIdentityService({
      pool: ctx.db,
      custody,
      custodyKind,
      issuer,
      orchestratorId: ctx.nodeId,
      logger,
      ...(timestamper === undefined ? {} : { timestamper }),
    });
    await registerIdentityRoutes(ctx.http, service);

    let sweeping: Promise<void> | undefined;
    const sweep = () => {
      // One sweep at a time: a slow signer must not pile sweeps up behind each other.
      if (sweeping !== undefined) return;
      sweeping = service.fulfilDeferredAttestations().then(
        (result) => {
          if (result.fulfilled > 0) logger.info(result, 'deferred attestations fulfilled');
        },
        (error: unknown) => logger.warn({ err: error }, 'deferred attestation sweep failed'),
      ).finally(() => {
        sweeping = undefined;
      });
    };
    // A node that starts (a restart after a signer outage, a new key) signs what waited at once,
    // not a sweep interval later; then every FULFIL_SWEEP_MS.
    setImmediate(sweep);
    const timer = setInterval(sweep, FULFIL_SWEEP_MS);
    timer.unref();
    deps.onStop(async () => {
      clearInterval(timer);
      await sweeping;
    });
    logger.info({ issuer: service.issuer, custody: custodyKind }, 'OIDC issuer ready');
    return [provide(identityServiceRef, service)];
  },
};
