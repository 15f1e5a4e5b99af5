// A test fixture for `svc run remote`: the event to run the workflows against. Branch and sha
// default to the local git checkout.
import { fixture, push } from 'svc/sdk';

export default fixture('push-main', {
  event: push({ branches: ['main'] }),
  branch: 'main',
});
