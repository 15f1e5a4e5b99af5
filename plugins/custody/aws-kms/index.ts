// `aws-kms` custody (SVC_ORCHESTRATOR_SIGNER_KIND=aws-kms): an asymmetric ECC_NIST_P256 key in
// AWS KMS. The private key never leaves KMS: GetPublicKey gives the SPKI public key (turned into
// a JWK; kid = RFC 7638 thumbprint), Sign gives a DER ECDSA signature (turned into raw r‖s).
// The signer (custody.ts, with the AWS SDK) is imported only when an orchestrator signs this
// plugin in: every other process lists the plugin without loading the SDK.
import { Type } from 'typebox';
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import type { CustodyExtensionPoint } from '../../../core/extension-points/custody.ts';

export { derToJoseSignature, joseToDerSignature } from './der.ts';

const NonEmpty = Type.String({ minLength: 1 });
export const AwsKmsCustodyConfig = Type.Object(
  {
    keyArn: NonEmpty,
    region: NonEmpty,
    /** Without both, the AWS SDK's default credential chain is used (instance or task role). */
    accessKeyId: Type.Optional(NonEmpty),
    secretAccessKey: Type.Optional(NonEmpty),
    /** A KMS-compatible endpoint (tests, VPC endpoints). */
    endpoint: Type.Optional(Type.String({ pattern: '^https?://' })),
    timeoutMs: Type.Integer({ minimum: 100, maximum: 60_000, default: 10_000 }),
  },
  { additionalProperties: false },
);

export const awsKmsCustody = definePlugin({
  id: 'aws-kms',
  kind: 'custody',
  version: '0.9.0',
  kernelRange: '^0.9.0',
  description: 'ES256 signing by an ECC_NIST_P256 key in AWS KMS (the private key never leaves KMS)',
  configSchema: AwsKmsCustodyConfig,
  async create({ config }): Promise<CustodyExtensionPoint> {
    const { AwsKmsCustody } = await import('./custody.ts');
    return new AwsKmsCustody(config);
  },
});

export default awsKmsCustody;
