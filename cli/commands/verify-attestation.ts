// `svc verify-attestation <artifact> --bundle <file> [--trust-root <file>] [--issuer <url>]`:
// offline against a trust-root file, else online against the orchestrator's
// `/v1/verify-attestation` (the configured issuer; --issuer overrides). Exit 1 when refused.
// The bundle is an svc bundle (`.svc.json`) or a Sigstore bundle v0.3 (`.sigstore.json`), told
// apart by its media type. `--print-public-key` prints, instead, the PEM of the key the bundle
// names, taken from the trust root or the issuer's JWKS (what cosign --key and in-toto take).
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';
import { normalizeIssuer } from '../../kernel/orchestrator/identity/service.ts';
import { verifyAttestationBundle } from '../../kernel/orchestrator/identity/verify-attestation.ts';
import { isSigstoreBundle, publicKeyPem } from '../../kernel/orchestrator/identity/sigstore-bundle.ts';
import { loadConfig } from '../../kernel/services/config/index.ts';
import { InputError, SvcError, UnavailableError, messageOf } from '../../core/errors.ts';
import { Jwks, TrustRoot, VerifyAttestationResponse } from '../../schemas/identity.ts';
import { compileSchema, formatIssues } from '../../schemas/validate.ts';

const checkTrustRoot = compileSchema(TrustRoot);
const checkVerdict = compileSchema(VerifyAttestationResponse);
const checkJwks = compileSchema(Jwks);

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  try {
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  } catch (error) {
    throw new InputError('SVC_ERR_CLI_FILE', `could not read artifact ${path}: ${messageOf(error)}`);
  }
  return hash.digest('hex');
}

async function readJson(path: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new InputError('SVC_ERR_CLI_FILE', `could not read ${what} ${path}: ${messageOf(error)}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InputError('SVC_ERR_CLI_FILE', `${what} ${path} is not JSON: ${messageOf(error)}`);
  }
}

async function readTrustRoot(path: string): Promise<TrustRoot> {
  const checked = checkTrustRoot.validate(await readJson(path, 'trust root'));
  if (!checked.ok) throw new InputError('SVC_ERR_CLI_TRUST_ROOT', `trust root ${path} is not { issuer, jwks }: ${formatIssues(checked.issues)}`);
  return checked.value;
}

async function onlineIssuer(flag: string | undefined): Promise<string> {
  const configured = flag ?? (await loadConfig({ env: process.env, cwd: process.cwd() })).config.orchestrator.provenanceIssuer;
  if (!configured) throw new InputError(USAGE_ERROR_CODE, 'pass --trust-root <file> to verify offline, or --issuer <url> (or set SVC_ORCHESTRATOR_PROVENANCE_ISSUER) to verify online');
  return normalizeIssuer(configured);
}

/** The key a bundle names: `kid` (svc) or `verificationMaterial.publicKey.hint` (Sigstore). */
function bundleKid(bundle: unknown): string | undefined {
  const b = bundle as { kid?: unknown; verificationMaterial?: { publicKey?: { hint?: unknown } } } | null;
  const kid = isSigstoreBundle(bundle) ? b?.verificationMaterial?.publicKey?.hint : b?.kid;
  return typeof kid === 'string' && kid !== '' ? kid : undefined;
}

async function fetchJwks(issuer: string): Promise<Jwks> {
  let response: Response;
  try {
    response = await fetch(`${issuer}/.well-known/jwks.json`, { signal: AbortSignal.timeout(30_000) });
  } catch (error) {
    throw new UnavailableError('SVC_ERR_CLI_ORCHESTRATOR_UNREACHABLE', `could not reach ${issuer}/.well-known/jwks.json: ${messageOf(error)}`);
  }
  const body = (await response.json().catch(() => undefined)) as unknown;
  if (!response.ok || !checkJwks.check(body)) throw new SvcError('SVC_ERR_CLI_VERIFY_RESPONSE', `${issuer}/.well-known/jwks.json answered ${response.status} without a key set`);
  return body;
}

export default class VerifyAttestation extends SvcCommand {
  static override description = 'Verify a provenance attestation bundle (<artifact>.svc.json) for an artifact';
  static override examples = [
    '<%= config.bin %> verify-attestation dist/app.tgz --bundle dist/app.tgz.svc.json --trust-root trust-root.json',
    '<%= config.bin %> verify-attestation dist/app.tgz --bundle dist/app.tgz.svc.json --issuer https://ci.example.test',
    '<%= config.bin %> verify-attestation dist/app.tgz --bundle dist/app.tgz.sigstore.json --trust-root trust-root.json',
    '<%= config.bin %> verify-attestation --bundle dist/app.tgz.sigstore.json --trust-root trust-root.json --print-public-key > svc-key.pem',
  ];
  static override args = { artifact: Args.string({ required: false, description: 'the artifact file (not needed with --print-public-key)' }) };
  static override flags = {
    bundle: Flags.string({ required: true, description: 'attestation bundle file: <artifact>.svc.json or <artifact>.sigstore.json' }),
    'trust-root': Flags.string({ description: 'trust-root file { issuer, jwks } for offline verification' }),
    issuer: Flags.string({ description: 'orchestrator issuer URL for online verification (default: SVC_ORCHESTRATOR_PROVENANCE_ISSUER)' }),
    'print-public-key': Flags.boolean({ description: "print the PEM public key that signed the bundle (from the trust root or the issuer's JWKS) instead of verifying" }),
  };

  async run(): Promise<VerifyAttestationResponse | { kid: string; pem: string }> {
    const { args, flags } = await this.parse(VerifyAttestation);
    const bundle = await readJson(flags.bundle, 'bundle');
    if (flags['print-public-key']) return this.#printPublicKey(bundle, flags['trust-root'], flags.issuer);
    if (args.artifact === undefined) throw new InputError(USAGE_ERROR_CODE, 'name the artifact file to verify (or pass --print-public-key)');
    const artifactSha256 = await sha256File(args.artifact);
    let verdict: VerifyAttestationResponse;
    if (flags['trust-root']) {
      verdict = await verifyAttestationBundle({ bundle, artifactSha256, trust: await readTrustRoot(flags['trust-root']) });
    } else {
      verdict = await this.#online(await onlineIssuer(flags.issuer), bundle, artifactSha256);
    }
    if (!this.jsonEnabled()) {
      if (verdict.ok) this.log(`verified: ${verdict.subject.name} (sha256 ${verdict.subject.sha256}) signed by ${verdict.issuer} key ${verdict.kid} [${verdict.attestationOrigin ?? verdict.format}]${verdict.signedAt ? `, timestamped ${verdict.signedAt.genTime} by ${verdict.signedAt.tsa}` : ''}`);
      else this.logToStderr(`not verified (${verdict.reason}): ${verdict.message}`);
    }
    if (!verdict.ok) process.exitCode = 1;
    return verdict;
  }

  async #printPublicKey(bundle: unknown, trustRootPath: string | undefined, issuerFlag: string | undefined): Promise<{ kid: string; pem: string }> {
    const kid = bundleKid(bundle);
    if (kid === undefined) throw new InputError('SVC_ERR_CLI_FILE', 'the bundle names no key: it is neither an svc bundle (kid) nor a Sigstore bundle (verificationMaterial.publicKey.hint)');
    const jwks = trustRootPath !== undefined ? (await readTrustRoot(trustRootPath)).jwks : await fetchJwks(await onlineIssuer(issuerFlag));
    const jwk = jwks.keys.find((k) => k.kid === kid);
    if (!jwk) throw new InputError('SVC_ERR_CLI_TRUST_ROOT', `key ${kid} is not in the ${trustRootPath !== undefined ? `trust root ${trustRootPath}` : "issuer's JWKS"} (unknown, or revoked)`);
    const pem = publicKeyPem(jwk);
    if (!this.jsonEnabled()) process.stdout.write(pem);
    return { kid, pem };
  }

  async #online(issuer: string, bundle: unknown, artifactSha256: string): Promise<VerifyAttestationResponse> {
    let response: Response;
    try {
      response = await fetch(`${issuer}/v1/verify-attestation`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ bundle, artifactSha256 }),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      throw new UnavailableError('SVC_ERR_CLI_ORCHESTRATOR_UNREACHABLE', `could not reach ${issuer}/v1/verify-attestation: ${messageOf(error)}`);
    }
    const body = (await response.json().catch(() => undefined)) as unknown;
    if (!response.ok || !checkVerdict.check(body)) {
      throw new SvcError('SVC_ERR_CLI_VERIFY_RESPONSE', `${issuer}/v1/verify-attestation answered ${response.status} without a verdict`);
    }
    return body;
  }
}
