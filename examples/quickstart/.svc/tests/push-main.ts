// A test fixture: the event `svc run` runs the workflows against (`svc run push-main --local`).
// Branch and sha default to the local checkout.
import { fixture, push } from 'svc/sdk';

export default fixture('push-main', {
  event: push({ branches: ['main'] }),
  branch: 'main',
});
