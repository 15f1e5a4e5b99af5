// Release: on version tags only (`git tag v0.1.0 && git push svc v0.1.0`).
import { job, tag, workflow } from 'svc/sdk';
import { greet } from '../lib/greeting.ts';

export default workflow('release', {
  on: tag({ tags: ['v*'] }),
  jobs: {
    package: job({
      runsOn: ['local'],
      steps: (s) =>
        s.step('announce', (ctx) => {
          console.log(`${greet('release')} packaging ${String(ctx.event.tag ?? 'an untagged build')}`);
        }),
    }),
  },
});
