// `svc verify-attestation <artifact> --bundle <file> [--trust-root <file>] [--issuer <url>]`:
// offline against a trust-root file, else online against the orchestrator's
// `/v1/verify-attestation` (the configured issuer; --issuer overrides). Exit 1 when refused.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';
import { normalizeIssuer } from '../../kernel/orchestrator/identity/service.ts';
import { verifyAttestationBundle } from '../../kernel/orchestrator/identity/verify-attestation.ts';
import { loadConfig } from '../../kernel/services/config/index.ts';
import { InputError, SvcError, UnavailableError, messageOf } from '../../core/errors.ts';
import { TrustRoot, VerifyAttestationResponse } from '../../schemas/identity.ts';
import { compileSchema, formatIssues } from '../../schemas/validate.ts';

const checkTrustRoot = compileSchema(TrustRoot);
const checkVerdict = compileSchema(VerifyAttestationResponse);

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

export default class VerifyAttestation extends SvcCommand {
  static override description = 'Verify a provenance attestation bundle (<artifact>.svc.json) for an artifact';
  static override examples = [
    '<%= config.bin %> verify-attestation dist/app.tgz --bundle dist/app.tgz.svc.json --trust-root trust-root.json',
    '<%= config.bin %> verify-attestation dist/app.tgz --bundle dist/app.tgz.svc.json --issuer https://ci.example.test',
  ];
  static override args = { artifact: Args.string({ required: true, description: 'the artifact file' }) };
  static override flags = {
    bundle: Flags.string({ required: true, description: 'attestation bundle file' }),
    'trust-root': Flags.string({ description: 'trust-root file { issuer, jwks } for offline verification' }),
    issuer: Flags.string({ description: 'orchestrator issuer URL for online verification (default: SVC_ORCHESTRATOR_PROVENANCE_ISSUER)' }),
  };

  async run(): Promise<VerifyAttestationResponse> {
    const { args, flags } = await this.parse(VerifyAttestation);
    const artifactSha256 = await sha256File(args.artifact);
    const bundle = await readJson(flags.bundle, 'bundle');
    let verdict: VerifyAttestationResponse;
    if (flags['trust-root']) {
      const root = await readJson(flags['trust-root'], 'trust root');
      const checked = checkTrustRoot.validate(root);
      if (!checked.ok) throw new InputError('SVC_ERR_CLI_TRUST_ROOT', `trust root ${flags['trust-root']} is not { issuer, jwks }: ${formatIssues(checked.issues)}`);
      verdict = await verifyAttestationBundle({ bundle, artifactSha256, trust: checked.value });
    } else {
      const configured = flags.issuer ?? (await loadConfig({ env: process.env, cwd: process.cwd() })).config.orchestrator.provenanceIssuer;
      if (!configured) throw new InputError(USAGE_ERROR_CODE, 'pass --trust-root <file> to verify offline, or --issuer <url> (or set SVC_ORCHESTRATOR_PROVENANCE_ISSUER) to verify online');
      verdict = await this.#online(normalizeIssuer(configured), bundle, artifactSha256);
    }
    if (!this.jsonEnabled()) {
      if (verdict.ok) this.log(`verified: ${verdict.subject.name} (sha256 ${verdict.subject.sha256}) signed by ${verdict.issuer} key ${verdict.kid} [${verdict.attestationOrigin}]`);
      else this.logToStderr(`not verified (${verdict.reason}): ${verdict.message}`);
    }
    if (!verdict.ok) process.exitCode = 1;
    return verdict;
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
