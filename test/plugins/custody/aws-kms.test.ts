import t from 'tap';
import { AwsKmsCustody } from '../../../plugins/custody/aws-kms/custody.ts';
import { startKmsServer } from '../../fixtures/kms-server.ts';
import { custodyContract } from './contract.ts';

const kms = await startKmsServer();
t.teardown(() => kms.stop());
const config = (over: Record<string, unknown> = {}) => ({
  keyArn: kms.keyArn,
  region: 'us-east-1',
  accessKeyId: kms.accessKeyId,
  secretAccessKey: kms.secretAccessKey,
  endpoint: kms.url,
  // The largest the plugin allows: no call to the local server races its bound on a busy machine.
  // The one test of the timeout passes its own.
  timeoutMs: 60_000,
  ...over,
});

t.test('contract against the KMS protocol server', async (t) => {
  const custody = new AwsKmsCustody(config());
  t.teardown(() => custody.close());
  await custodyContract(t, custody);
  const jwk = kms.publicKey.export({ format: 'jwk' });
  t.match(await custody.getPublicJwk(), { x: jwk.x, y: jwk.y });
  t.ok(kms.calls.includes('TrentService.GetPublicKey'));
  t.ok(kms.calls.includes('TrentService.Sign'));
});

t.test('failures name KMS and the key, and are retried later', async (t) => {
  const wrongCreds = new AwsKmsCustody(config({ accessKeyId: 'AKIAWRONG' }));
  t.teardown(() => wrongCreds.close());
  await t.rejects(wrongCreds.keyId(), { code: 'SVC_ERR_CUSTODY_KMS', message: /KMS GetPublicKey for arn:aws:kms.*security token/ });
  const wrongKey = new AwsKmsCustody(config({ keyArn: 'arn:aws:kms:us-east-1:1:key/nope' }));
  t.teardown(() => wrongKey.close());
  await t.rejects(wrongKey.keyId(), { message: /does not exist/ });

  const custody = new AwsKmsCustody(config());
  t.teardown(() => custody.close());
  kms.failWith('error');
  await t.rejects(custody.keyId(), { message: /access denied/ });
  kms.failWith('none');
  t.ok(await custody.keyId(), 'recovers once KMS answers');
  const short = new AwsKmsCustody(config({ timeoutMs: 1500 }));
  t.teardown(() => short.close());
  kms.failWith('hang');
  const started = Date.now();
  await t.rejects(short.sign(Buffer.from('x')), { code: 'SVC_ERR_CUSTODY_KMS' });
  t.ok(Date.now() - started < 300_000, 'hang guard: bounded by the timeout');
  kms.failWith('none');
  t.throws(() => new AwsKmsCustody(config({ secretAccessKey: undefined })), { code: 'SVC_ERR_CUSTODY_KMS_CONFIG' });
});

t.test('a key that is not P-256 is refused', async (t) => {
  const rsa = await startKmsServer({ keySpec: 'RSA_2048' });
  t.teardown(() => rsa.stop());
  const custody = new AwsKmsCustody({ ...config(), endpoint: rsa.url, keyArn: rsa.keyArn });
  t.teardown(() => custody.close());
  await t.rejects(custody.keyId(), { code: 'SVC_ERR_CUSTODY_KMS_KEY_SPEC', message: /RSA_2048.*ECC_NIST_P256/ });
});
