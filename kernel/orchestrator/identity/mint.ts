// Minting identity tokens (spec "Identity token", "Step API for identity tokens", Limits): the
// agent that owns a running job asks; claims come from the run/job rows; the custody plugin signs.
// No key within 7.5 s → `{ deferred: true, code: 'unavailable' }`; a key that cannot be used →
// deferred at once with a failure code.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { CUSTODY_NO_ACTIVE_KEY, type CustodyExtensionPoint } from '../../../core/extension-points/custody.ts';
import type { AttestationOrigin, CustodyKind, IdentityClaims } from '../../../schemas/identity.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { InputError, NotAllowedError, isSvcError, messageOf } from '../../../core/errors.ts';
import { claimsFor, loadRunJob, type RunJobRow } from './claims.ts';
import { signCompactJws } from './jws.ts';
import { registerExternalKey, signingKeyStatus } from './key-store.ts';

/** spec Limits: about 10 minutes. */
export const TOKEN_LIFETIME_SECONDS = 600;
/** spec Limits: mint deferral when no key is ready. */
export const KEY_WAIT_MS = 7_500;
const KEY_POLL_MS = 250;
const OWNING_STATUSES = new Set(['dispatched', 'running']);

export type MintResult = { token: string; expiresIn: number } | { deferred: true; code: string };

export interface MintRequest {
  jobId: string;
  agentId: string;
  audience: string;
}

export interface MinterOptions {
  pool: DatabasePool;
  custody: CustodyExtensionPoint;
  custodyKind: CustodyKind;
  issuer: string;
  orchestratorId: string;
  logger: Logger;
  keyWaitMs?: number;
  lifetimeSeconds?: number;
}

export interface SignedToken {
  token: string;
  kid: string;
  claims: IdentityClaims;
}

/** A deferral with its code; thrown inside the minter, turned into `{ deferred, code }` at the edge. */
class Deferral extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

export function checkAudience(audience: unknown): string {
  if (typeof audience !== 'string' || audience.length === 0 || audience.length > 1000 || /[\u0000-\u001f\u007f]/.test(audience)) {
    throw new InputError('SVC_ERR_IDENTITY_AUDIENCE', 'audience must be 1 to 1000 printable characters');
  }
  return audience;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Minter {
  readonly #o: Required<MinterOptions>;
  #externalChecked: { kid: string; at: number } | undefined;

  constructor(options: MinterOptions) {
    this.#o = { keyWaitMs: KEY_WAIT_MS, lifetimeSeconds: TOKEN_LIFETIME_SECONDS, ...options };
  }

  get issuer(): string {
    return this.#o.issuer;
  }

  get orchestratorId(): string {
    return this.#o.orchestratorId;
  }

  /** The kid to sign with, waiting up to keyWaitMs for one to become active. */
  async #readyKid(): Promise<string> {
    const deadline = Date.now() + this.#o.keyWaitMs;
    for (;;) {
      try {
        const kid = await this.#o.custody.keyId();
        if (this.#o.custodyKind !== 'db') await this.#checkExternal(kid);
        return kid;
      } catch (error) {
        if (error instanceof Deferral) throw error;
        if (!(isSvcError(error) && error.code === CUSTODY_NO_ACTIVE_KEY)) {
          throw new Deferral(this.#o.custodyKind === 'db' ? 'key_unavailable' : 'signer_failed', messageOf(error));
        }
        if (Date.now() + KEY_POLL_MS > deadline) throw new Deferral('unavailable', 'no signing key became ready in time');
        await sleep(KEY_POLL_MS);
      }
    }
  }

  /** An external key must be recorded (for the JWKS) and not revoked. */
  async #checkExternal(kid: string): Promise<void> {
    const now = Date.now();
    if (this.#externalChecked?.kid === kid && now - this.#externalChecked.at < 1000) return;
    let status = await signingKeyStatus(this.#o.pool, kid);
    if (status === undefined) status = await registerExternalKey(this.#o.pool, this.#o.custodyKind, kid, await this.#o.custody.getPublicJwk());
    if (status === 'revoked') throw new Deferral('key_revoked', `the ${this.#o.custodyKind} signing key ${kid} is revoked`);
    this.#externalChecked = { kid, at: now };
  }

  /** Sign a token for a run/job row (the caller has checked who may ask). */
  /** `orchestratorId`: the node that ran the job, when another node (or svc-admin) signs later. */
  async signFor(row: RunJobRow, audience: string, origin: AttestationOrigin, statementHash: string | null, orchestratorId?: string): Promise<SignedToken> {
    const kid = await this.#readyKid();
    const claims = claimsFor(row, {
      issuer: this.#o.issuer,
      audience,
      orchestratorId: orchestratorId ?? this.#o.orchestratorId,
      origin,
      statementHash,
      nowSeconds: Math.floor(Date.now() / 1000),
      lifetimeSeconds: this.#o.lifetimeSeconds,
      jti: randomUUID(),
    });
    try {
      return { token: await signCompactJws(this.#o.custody, kid, claims), kid, claims };
    } catch (error) {
      throw new Deferral(this.#o.custodyKind === 'db' ? 'key_unavailable' : 'signer_failed', messageOf(error));
    }
  }

  /** The row of a job the agent owns now; NotAllowedError (`not_owner`) otherwise. */
  async ownedJob(jobId: string, agentId: string): Promise<RunJobRow> {
    const row = await loadRunJob(this.#o.pool, jobId);
    if (!row || row.agent_id !== agentId || !OWNING_STATUSES.has(row.job_status)) {
      throw new NotAllowedError('SVC_ERR_IDENTITY_NOT_OWNER', `agent ${agentId} does not run job ${jobId}; only the agent running a job can mint its tokens`, {
        details: { code: 'not_owner' },
      });
    }
    return row;
  }

  /** Deferral → `{ deferred, code }`; anything else propagates. */
  async deferring<T>(fn: () => Promise<T>): Promise<T | { deferred: true; code: string }> {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof Deferral) {
        this.#o.logger.warn({ code: error.code, reason: error.message }, 'identity token deferred');
        return { deferred: true, code: error.code };
      }
      throw error;
    }
  }

  async mintIdentityToken(request: MintRequest): Promise<MintResult> {
    const audience = checkAudience(request.audience);
    const row = await this.ownedJob(request.jobId, request.agentId);
    return this.deferring(async () => {
      const signed = await this.signFor(row, audience, 'live', null);
      return { token: signed.token, expiresIn: this.#o.lifetimeSeconds };
    });
  }
}
