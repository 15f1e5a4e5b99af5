// The `aws-kms` custody's signer (index.ts is the plugin's definition, which imports this file only
// when an orchestrator signs the plugin in: the AWS SDK is then loaded by no other process).
import { createHash, createPublicKey } from 'node:crypto';
import { GetPublicKeyCommand, KMSClient, SignCommand } from '@aws-sdk/client-kms';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { CustodyExtensionPoint } from '../../../core/extension-points/custody.ts';
import { ConflictError, SvcError, messageOf } from '../../../core/errors.ts';
import { derToJoseSignature } from './der.ts';

/** KMS signs RAW messages up to 4096 bytes; longer ones are sent as their SHA-256 digest. */
const RAW_LIMIT = 4096;

export class AwsKmsCustody implements CustodyExtensionPoint {
  readonly #client: KMSClient;
  readonly #keyArn: string;
  #key: Promise<{ kid: string; jwk: JWK }> | undefined;

  constructor(config: { keyArn: string; region: string; accessKeyId?: string; secretAccessKey?: string; endpoint?: string; timeoutMs: number }) {
    if ((config.accessKeyId === undefined) !== (config.secretAccessKey === undefined)) {
      throw new SvcError('SVC_ERR_CUSTODY_KMS_CONFIG', 'set both SVC_ORCHESTRATOR_KMS_ACCESS_KEY_ID and SVC_ORCHESTRATOR_KMS_SECRET_ACCESS_KEY, or neither');
    }
    this.#keyArn = config.keyArn;
    this.#client = new KMSClient({
      region: config.region,
      maxAttempts: 2,
      requestHandler: { requestTimeout: config.timeoutMs, connectionTimeout: Math.min(config.timeoutMs, 5000), throwOnRequestTimeout: true },
      ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
      ...(config.accessKeyId === undefined || config.secretAccessKey === undefined
        ? {}
        : { credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } }),
    });
  }

  #fail(what: string, error: unknown): SvcError {
    return new SvcError('SVC_ERR_CUSTODY_KMS', `KMS ${what} for ${this.#keyArn} failed: ${messageOf(error)}`, { cause: error });
  }

  async #load(): Promise<{ kid: string; jwk: JWK }> {
    let output;
    try {
      output = await this.#client.send(new GetPublicKeyCommand({ KeyId: this.#keyArn }));
    } catch (error) {
      throw this.#fail('GetPublicKey', error);
    }
    if (output.KeySpec !== undefined && output.KeySpec !== 'ECC_NIST_P256') {
      throw new SvcError('SVC_ERR_CUSTODY_KMS_KEY_SPEC', `KMS key ${this.#keyArn} is ${output.KeySpec}; ES256 needs an ECC_NIST_P256 key`);
    }
    if (!output.PublicKey) throw new SvcError('SVC_ERR_CUSTODY_KMS', `KMS GetPublicKey for ${this.#keyArn} returned no public key`);
    let jwk: JWK;
    try {
      jwk = createPublicKey({ key: Buffer.from(output.PublicKey), format: 'der', type: 'spki' }).export({ format: 'jwk' }) as JWK;
    } catch (error) {
      throw new SvcError('SVC_ERR_CUSTODY_KMS_KEY_SPEC', `KMS key ${this.#keyArn} public key is not a valid SPKI key: ${messageOf(error)}`);
    }
    if (jwk.kty !== 'EC' || jwk.crv !== 'P-256') {
      throw new SvcError('SVC_ERR_CUSTODY_KMS_KEY_SPEC', `KMS key ${this.#keyArn} is not an EC P-256 key`);
    }
    const publicJwk: JWK = { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
    return { kid: await calculateJwkThumbprint(publicJwk, 'sha256'), jwk: publicJwk };
  }

  async #current(): Promise<{ kid: string; jwk: JWK }> {
    // The key of an ARN never changes; a failed load is retried on the next call.
    this.#key ??= this.#load().catch((error: unknown) => {
      this.#key = undefined;
      throw error;
    });
    return this.#key;
  }

  async keyId(): Promise<string> {
    return (await this.#current()).kid;
  }

  async getPublicJwk(): Promise<JWK> {
    const { kid, jwk } = await this.#current();
    return { ...jwk, kid, alg: 'ES256', use: 'sig' };
  }

  async sign(bytes: Uint8Array, kid?: string): Promise<Uint8Array> {
    const current = await this.#current();
    if (kid !== undefined && kid !== current.kid) throw new ConflictError('SVC_ERR_CUSTODY_KEY_STATE', `KMS key ${this.#keyArn} is ${current.kid}, not ${kid}`);
    const raw = bytes.length <= RAW_LIMIT;
    let output;
    try {
      output = await this.#client.send(
        new SignCommand({
          KeyId: this.#keyArn,
          SigningAlgorithm: 'ECDSA_SHA_256',
          MessageType: raw ? 'RAW' : 'DIGEST',
          Message: raw ? bytes : createHash('sha256').update(bytes).digest(),
        }),
      );
    } catch (error) {
      throw this.#fail('Sign', error);
    }
    if (!output.Signature) throw new SvcError('SVC_ERR_CUSTODY_KMS', `KMS Sign for ${this.#keyArn} returned no signature`);
    return derToJoseSignature(output.Signature);
  }

  close(): void {
    this.#client.destroy();
  }
}
