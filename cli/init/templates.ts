// What `svc init` writes under `.svc/`. Kept as text here (not asset files) so the compiled
// package needs no copy step. The example workflow exercises the common shapes: two triggers,
// two jobs joined by `needs`, and a matrix.
import { DEFAULT_SVCIGNORE } from '../../workflow/hash/index.ts';

export const CI_WORKFLOW = `// CI for this repository: runs on pushes to main and on pull requests.
// \`svc compile\` turns this file into .svc/svc.lock.json; commit both (\`svc hook install\` keeps
// the lock in step on every commit). \`svc preview push\` shows what an event would run.
import { job, pr, push, workflow } from 'svc/sdk';

export default workflow('ci', {
  on: [push({ branches: ['main'] }), pr()],
  jobs: {
    lint: job({
      runsOn: ['linux'],
      steps: (s) =>
        s
          .step('install', async (ctx) => {
            await ctx.$\`npm ci\`;
          })
          .step('lint', async (ctx) => {
            await ctx.$\`npm run lint --if-present\`;
          }),
    }),
    test: job({
      runsOn: ['linux'],
      needs: ['lint'],
      matrix: { node: ['22', '24'] },
      steps: (s) =>
        s
          .step('install', async (ctx) => {
            ctx.log.info(\`testing on Node \${ctx.matrix.node}\`);
            await ctx.$\`npm ci\`;
          })
          .step('test', async (ctx) => {
            await ctx.$\`npm test\`;
          }),
    }),
  },
});
`;

export const CI_FIXTURE = `// A test fixture for \`svc run remote\`: the event to run the workflows against. Branch, sha and
// repository default to the local git checkout; override them here when needed.
import { fixture, pr } from 'svc/sdk';

export default fixture('ci-pull-request', {
  event: pr({ actions: ['opened'] }),
  branch: 'feature/example',
});
`;

export const SVC_GITIGNORE = `# Machine-local files under .svc/ (also left out of the content hash by .svcignore).
node_modules/
types/
`;

/** `.svc/tsconfig.json`: editors resolve \`svc/sdk\` through \`svc types\` or the installed package. */
export function tsconfigJson(): string {
  const config = {
    compilerOptions: {
      target: 'es2024',
      lib: ['es2024'],
      module: 'nodenext',
      moduleResolution: 'nodenext',
      strict: true,
      noEmit: true,
      allowImportingTsExtensions: true,
      erasableSyntaxOnly: true,
      verbatimModuleSyntax: true,
      skipLibCheck: true,
      paths: {
        'svc/sdk': ['./types/svc-sdk.d.ts', './node_modules/svc/dist/sdk/index.d.ts'],
        svc: ['./types/svc-sdk.d.ts', './node_modules/svc/dist/sdk/index.d.ts'],
      },
    },
    include: ['workflows', 'tests', 'types'],
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/** `.svc/package.json`: an ES module project with a devDependency on svc for editor types. */
export function packageJson(svcVersion: string): string {
  const pkg = {
    name: 'svc-workflows',
    private: true,
    type: 'module',
    description: 'CI workflows run by svc (.svc/workflows/*.ts)',
    devDependencies: { svc: `^${svcVersion}` },
  };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

export { DEFAULT_SVCIGNORE };
