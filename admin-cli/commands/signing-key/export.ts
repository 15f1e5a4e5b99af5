// `svc-admin signing-key export --public --out <file>`: the `{ issuer, jwks }` trust root, public
// material only. Keys come from the database when one is given, else from the issuer's JWKS.
import { writeFile } from 'node:fs/promises';
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { publicKeySet, revokedKeyMaterial } from '../../../kernel/orchestrator/identity/key-store.ts';
import { timestamperFromConfig } from '../../../kernel/orchestrator/identity/timestamp.ts';
import { normalizeIssuer } from '../../../kernel/orchestrator/identity/service.ts';
import { InputError, SvcError, UnavailableError, messageOf } from '../../../core/errors.ts';
import { Jwks, type TrustRoot } from '../../../schemas/identity.ts';
import { compileSchema } from '../../../schemas/validate.ts';
import { adminConfig, databaseFlag, databaseUrlOf, withDatabase } from './shared.ts';

const checkJwks = compileSchema(Jwks);

export default class SigningKeyExport extends SvcCommand {
  static override description = 'Write the trust-root file { issuer, jwks } (public keys only)';
  static override flags = {
    ...databaseFlag,
    public: Flags.boolean({ required: true, description: 'export public material (the only kind there is)' }),
    out: Flags.string({ required: true, description: 'file to write' }),
    issuer: Flags.string({ description: 'issuer URL (default: SVC_ORCHESTRATOR_PROVENANCE_ISSUER)' }),
  };

  async run(): Promise<TrustRoot & { out: string }> {
    const { flags } = await this.parse(SigningKeyExport);
    if (!flags.public) throw new InputError(USAGE_ERROR_CODE, 'only --public export exists: private keys are never exported');
    const config = await adminConfig();
    const issuerText = flags.issuer ?? config.orchestrator.provenanceIssuer;
    if (!issuerText) throw new InputError(USAGE_ERROR_CODE, 'the trust root names its issuer: pass --issuer or set SVC_ORCHESTRATOR_PROVENANCE_ISSUER');
    let issuer: string;
    try {
      issuer = normalizeIssuer(issuerText);
    } catch {
      throw new InputError(USAGE_ERROR_CODE, `--issuer ${issuerText} is not a URL`);
    }
    const dbUrl = databaseUrlOf(config, flags['database-url']);
    const [jwks, revokedKeys] = dbUrl ? await withDatabase(dbUrl, (pool) => Promise.all([publicKeySet(pool), revokedKeyMaterial(pool)])) : [await fetchJwks(issuer), []];
    // What a verifier needs after a compromise revoke: the revoked keys' times and the TSA chain.
    const timestamper = await timestamperFromConfig(config.orchestrator);
    const root: TrustRoot = {
      issuer,
      jwks,
      ...(revokedKeys.length === 0 ? {} : { revokedKeys }),
      ...(timestamper === undefined ? {} : { timestampAuthorities: [{ uri: timestamper.url, certChain: [...timestamper.certificates] }] }),
    };
    await writeFile(flags.out, JSON.stringify(root, null, 2) + '\n');
    this.log(`wrote ${flags.out}: issuer ${issuer}, ${jwks.keys.length} public key(s)`);
    return { ...root, out: flags.out };
  }
}

async function fetchJwks(issuer: string) {
  let body: unknown;
  try {
    const response = await fetch(`${issuer}/.well-known/jwks.json`, { signal: AbortSignal.timeout(15_000) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    body = await response.json();
  } catch (error) {
    throw new UnavailableError('SVC_ERR_IDENTITY_JWKS_UNREACHABLE', `could not read ${issuer}/.well-known/jwks.json: ${messageOf(error)}`);
  }
  if (!checkJwks.check(body)) throw new SvcError('SVC_ERR_IDENTITY_JWKS_INVALID', `${issuer}/.well-known/jwks.json is not a JWKS of EC P-256 keys`);
  return body;
}
