// The log viewer's ANSI handling (kernel/relay/dashboard/ui/browser/ansi.ts, plain code the
// browser bundle uses): SGR codes become classes, other escapes are dropped, text stays text.
import t from 'tap';
import { parseAnsi, plainText } from '../../../../kernel/relay/dashboard/ui/browser/ansi.ts';

t.test('plain lines are one segment, untouched', async (t) => {
  t.same(parseAnsi('<b>not markup</b> & more'), [{ text: '<b>not markup</b> & more', classes: [] }]);
});

t.test('SGR colours and styles become classes; reset and partial resets end them', async (t) => {
  t.same(parseAnsi('\x1b[32mgreen\x1b[0m plain \x1b[1;31mred bold\x1b[22m red\x1b[39m'), [
    { text: 'green', classes: ['a-f2'] },
    { text: ' plain ', classes: [] },
    { text: 'red bold', classes: ['a-b', 'a-f1'] },
    { text: ' red', classes: ['a-f1'] },
  ]);
  t.same(parseAnsi('\x1b[94;41mhi'), [{ text: 'hi', classes: ['a-f12', 'a-g1'] }], 'bright foreground, background');
  t.same(parseAnsi('\x1b[38;5;3myellow\x1b[38;2;1;2;3m same\x1b[48;5;200mx'), [
    { text: 'yellow', classes: ['a-f3'] },
    { text: ' same', classes: ['a-f3'] },
    { text: 'x', classes: ['a-f3'] },
  ], '256-colour maps its first 16; true colour and the rest are skipped without eating text');
  t.same(parseAnsi('\x1b[mx'), [{ text: 'x', classes: [] }], 'ESC[m is a reset');
});

t.test('other escape sequences are dropped, never shown or interpreted', async (t) => {
  t.same(parseAnsi('a\x1b[2Kb\x1b]0;title\x07c\x1b]8;;http://x\x1b\\d'), [
    { text: 'a', classes: [] },
    { text: 'b', classes: [] },
    { text: 'c', classes: [] },
    { text: 'd', classes: [] },
  ]);
  t.equal(plainText('\x1b[1mline\x1b[0m 7'), 'line 7', 'search sees the text without escapes');
});
