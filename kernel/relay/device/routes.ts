// The device authorization endpoints the CLI calls (RFC 8628; `svc login`, `svc login --device`):
//   POST /v1/device/code  → 200 { device_code, user_code, verification_uri, verification_uri_complete,
//                                 expires_in, interval }                 (429 past the per-address rate)
//   POST /v1/device/token { device_code, grant_type? }
//                         → 200 { access_token, token_type: "bearer", org, user, token_id, expires_at }
//                         → 400 { error: authorization_pending | slow_down | expired_token |
//                                 access_denied | invalid_grant | invalid_request,
//                                 error_description, code: SVC_ERR_…, interval? }
// Neither needs a token: the device code is the secret. Both accept JSON or a form body (RFC 8628
// clients send forms).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { RateLimitedError } from '../../../core/errors.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { TokenBuckets } from '../../webhook/rate-limiter.ts';
import { ownOrigin } from '../sessions/index.ts';
import { createDeviceCode, pollDeviceCode, type PollOutcome } from './store.ts';
import { recordRelayAudit } from '../audit/record.ts';

export const DEVICE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';
/** New code pairs per client address and minute (burst as large). */
export const DEVICE_CODES_PER_IP_RPM = 10;
/**
 * Token polls per client address and minute, whatever the codes (slow_down governs each code):
 * room for 50 logins at once behind one NAT at the default 5 s interval.
 */
export const DEVICE_POLLS_PER_IP_RPM = 600;

export interface DeviceRouteOptions {
  db: DatabasePool;
  logger: Logger;
  intervalSeconds?: number;
  ttlSeconds?: number;
  /** Lifetime of a token minted for a person signed in through a provider (relay.sso.tokenTtlSeconds). */
  personTokenTtlSeconds?: number;
}

type DeviceError = Exclude<PollOutcome['kind'], 'token'> | 'invalid_request';

const ERRORS: Record<DeviceError, { code: string; description: string }> = {
  authorization_pending: { code: 'SVC_ERR_RELAY_DEVICE_AUTHORIZATION_PENDING', description: 'the code has not been approved yet; keep polling' },
  slow_down: { code: 'SVC_ERR_RELAY_DEVICE_SLOW_DOWN', description: 'polling too fast; wait the returned interval between polls' },
  expired_token: { code: 'SVC_ERR_RELAY_DEVICE_EXPIRED', description: 'the code expired before it was approved; run "svc login" again' },
  access_denied: { code: 'SVC_ERR_RELAY_DEVICE_ACCESS_DENIED', description: 'the login was denied in the browser' },
  invalid_grant: { code: 'SVC_ERR_RELAY_DEVICE_CODE_INVALID', description: 'unknown or already used device code; run "svc login" again' },
  invalid_request: { code: 'SVC_ERR_RELAY_DEVICE_REQUEST_INVALID', description: `send { "device_code": "…", "grant_type": "${DEVICE_GRANT_TYPE}" }` },
};

function deviceError(reply: FastifyReply, error: DeviceError, extra: Record<string, unknown> = {}): FastifyReply {
  const { code, description } = ERRORS[error];
  return reply.code(400).header('cache-control', 'no-store').type('application/json; charset=utf-8').send({ error, error_description: description, code, ...extra });
}

function field(request: FastifyRequest, name: string): unknown {
  const body = request.body;
  return typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;
}

export function registerDeviceApiRoutes(scope: SvcHttpServer, options: DeviceRouteOptions): void {
  const { db, logger } = options;
  const codeBuckets = new TokenBuckets(10_000);
  const pollBuckets = new TokenBuckets(10_000);
  const limit = (buckets: TokenBuckets, request: FastifyRequest, perMinute: number, what: string): void => {
    const wait = buckets.take(request.ip, perMinute, Date.now());
    if (wait > 0) throw new RateLimitedError('SVC_ERR_RELAY_DEVICE_RATE_LIMITED', `too many ${what} from this address; retry in ${wait} s`, wait);
  };

  scope.post('/v1/device/code', async (request, reply) => {
    limit(codeBuckets, request, DEVICE_CODES_PER_IP_RPM, 'device logins');
    const pair = await createDeviceCode(db, {
      ...(options.intervalSeconds !== undefined ? { intervalSeconds: options.intervalSeconds } : {}),
      ...(options.ttlSeconds !== undefined ? { ttlSeconds: options.ttlSeconds } : {}),
    });
    const verificationUri = `${ownOrigin(request)}/device`;
    logger.info({ ip: request.ip }, 'device code issued');
    return reply
      .header('cache-control', 'no-store')
      .type('application/json; charset=utf-8')
      .send({
        device_code: pair.deviceCode,
        user_code: pair.userCode,
        verification_uri: verificationUri,
        verification_uri_complete: `${verificationUri}?user_code=${encodeURIComponent(pair.userCode)}`,
        expires_in: pair.expiresIn,
        interval: pair.interval,
      });
  });

  scope.post('/v1/device/token', async (request, reply) => {
    limit(pollBuckets, request, DEVICE_POLLS_PER_IP_RPM, 'token polls');
    const deviceCode = field(request, 'device_code');
    const grantType = field(request, 'grant_type');
    if (typeof deviceCode !== 'string' || (grantType !== undefined && grantType !== DEVICE_GRANT_TYPE)) return deviceError(reply, 'invalid_request');
    const outcome = await pollDeviceCode(db, deviceCode, options.personTokenTtlSeconds);
    if (outcome.kind === 'slow_down') return deviceError(reply, 'slow_down', { interval: outcome.interval });
    if (outcome.kind !== 'token') return deviceError(reply, outcome.kind);
    const { pat } = outcome;
    logger.info({ orgId: pat.orgId, user: pat.user, patId: pat.id }, 'device login approved; token minted');
    await recordRelayAudit(db, {
      orgId: pat.orgId,
      actor: outcome.approvedBy,
      action: 'token.create',
      target: `token:${pat.id}`,
      outcome: 'ok',
      detail: `${pat.name} (device login${pat.expiresAt === null ? '' : `, expires ${pat.expiresAt}`})`,
      ...(outcome.approvedBy.kind === 'person' ? { person: outcome.approvedBy.id } : {}),
    });
    return reply
      .header('cache-control', 'no-store')
      .type('application/json; charset=utf-8')
      .send({
        access_token: pat.token,
        token_type: 'bearer',
        org: pat.orgId,
        user: pat.user,
        token_id: pat.id,
        expires_at: pat.expiresAt,
        // A person's token (signed in through a provider) is short-lived and renewed with this.
        ...(outcome.refreshToken !== undefined ? { refresh_token: outcome.refreshToken } : {}),
      });
  });
}
