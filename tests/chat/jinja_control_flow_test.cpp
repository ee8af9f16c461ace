// Control flow of the Jinja interpreter against Jinja2: macros, call blocks, recursive
// loops, loop.changed, cycler and joiner, with their errors and limits. Every expected
// string is Jinja2 3.1.6's output under Hugging Face's set-up (as jinja_interpreter_test).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chat/jinja_test_support.h"

namespace dspark::jinja {
namespace {

using testing::error_of;
using testing::expect_renders;
using testing::render;
using testing::RenderCase;

TEST(JinjaMatchesJinja2, Macros) {
  expect_renders({
      {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }} {{ greet(punct='.', name='c') }}",
       "",
       "Hi a! Hi b? Hi c."},
      {"{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}",
       "",
       "120"},
      {"{% macro m() %}x{% endmacro %}{{ m() ~ m() }} {{ (m() + 'y')|length }} {{ m() is string }}",
       "",
       "xx 2 True"},
      {"{% macro show() %}{{ top }}{% endmacro %}{% set top = 'late' %}{{ show() }}",
       "",
       "late"},
      {"{% macro m(a) %}{{ a }}|{{ b }}{% endmacro %}{% for b in [1] %}{{ m(2) }}{% endfor %}",
       "",
       "2|"},
      {"{% macro m(a, b) %}[{{ a }}][{{ b }}]{% endmacro %}{{ m(1) }}",
       "",
       "[1][]"},
      {"{% macro t(spec) %}{% if spec.type == 'array' %}list[{{ t(spec['items']) }}]{% else %}{{ spec.type }}{% endif %}{% endmacro %}{{ t({'type': 'array', 'items': {'type': 'array', 'items': {'type': 'int'}}}) }}",
       "",
       "list[list[int]]"},
  });
}

// {% call %} blocks: the macro gets the block's body as `caller`, which renders among the
// variables of the call site (an enclosing loop's included), with its own parameters.
TEST(JinjaMatchesJinja2, CallBlocks) {
  expect_renders({
      {"{% macro box() %}[{{ caller() }}]{% endmacro %}{% call box() %}inside{% endcall %}",
       "",
       "[inside]"},
      {"{% macro wrap(tag, cls='x') %}<{{ tag }} class=\"{{ cls }}\">{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('p') %}a{% endcall %}{% call wrap('div', cls='y') %}b{% endcall %}",
       "",
       "<p class=\"x\">a</p><div class=\"y\">b</div>"},
      {"{% macro rows(items) %}{% for i in items %}{{ caller(i, loop.index) }};{% endfor %}{% endmacro %}{% call(item, n) rows(['a', 'b']) %}{{ n }}={{ item }}{% endcall %}",
       "",
       "1=a;2=b;"},
      {"{% macro m() %}{{ caller('x') }}|{{ caller(b='y') }}|{{ caller() }}{% endmacro %}{% call(a='A', b='B') m() %}{{ a }}{{ b }}{% endcall %}",
       "",
       "xB|Ay|AB"},
      {"{% macro list(items) %}<ul>{% for i in items %}<li>{{ caller(i, loop.index) }}</li>{% endfor %}</ul>{% endmacro %}{% for g in groups %}{% call(item, n) list(g) %}{{ loop.index }}.{{ n }}:{{ item }}{% endcall %}{% endfor %}",
       "{\"groups\": [[\"a\", \"b\"], [\"c\"]]}",
       "<ul><li>1.1:a</li><li>1.2:b</li></ul><ul><li>2.1:c</li></ul>"},
      {"{% macro m() %}{% set x = 'macro' %}{{ caller() }}{% endmacro %}{% set x = 'site' %}{% call m() %}{{ x }}{% endcall %}",
       "",
       "site"},
      {"{% macro m() %}{{ caller() }}{% endmacro %}{% for x in [1, 2] %}{% call m() %}{{ x }}{% set y = 5 %}{% endcall %}[{{ y }}]{% endfor %}",
       "",
       "1[]2[]"},
      {"{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% macro page(title) %}{% call wrap('h1') %}{{ title }}{% endcall %}{% endmacro %}{{ page('Hi') }}",
       "",
       "<h1>Hi</h1>"},
      {"{% macro m() %}{{ caller() }}{% endmacro %}{% set p = 'P' %}{% call(x=p ~ '!') m() %}{{ x }}{% endcall %}",
       "",
       "P!"},
      {"{% macro outer() %}({{ caller() }}){% endmacro %}{% macro inner() %}<{{ caller() }}>{% endmacro %}{% call outer() %}{% call inner() %}core{% endcall %}{% endcall %}",
       "",
       "(<core>)"},
      {"{% macro m() %}{{ caller() }}{% endmacro %}{% call m() %}{{ caller is defined }}{% endcall %}",
       "",
       "False"},
      {"{% macro m() %}[{{ caller }}]{% endmacro %}{{ m() }} {{ m(caller='given') }}",
       "",
       "[] [given]"},
      {"{% macro m() %}{% if false %}{{ caller() }}{% endif %}ok{% endmacro %}{% call m() %}x{% endcall %}",
       "",
       "ok"},
      {"{% macro m(a, caller=none) %}{{ a }}{{ caller() if caller else '-' }}{% endmacro %}{{ m(1) }} {% call m(2) %}x{% endcall %}",
       "",
       "1- 2x"},
      {"{% macro m() %}{{ caller()|upper }}{{ caller() is string }}{% endmacro %}{% call m() %}shout{% endcall %}",
       "",
       "SHOUTTrue"},
      {"{% macro m() %}{{ caller() }}{% endmacro %}\n  {% call m() %}\n  x\n  {% endcall %}\nz",
       "",
       "  x\nz"},
      {"{% macro m() %}{{ caller() }}{% endmacro %}{%- call m() -%}\n  x\n{%- endcall %}\nz",
       "",
       "xz"},
      {"{% macro m() %}{{ caller() }}{% endmacro %}{% call m() %}{% macro inner() %}in{% endmacro %}{{ inner() }}{% endcall %} {{ inner is defined }}",
       "",
       "in False"},
      {"{% macro m() %}{% for x in [1, 2] %}{{ caller() }}{% endfor %}{% endmacro %}{% for y in ['a'] %}{% call m() %}{{ y }}{{ loop.index }}{% endcall %}{% endfor %}",
       "",
       "a1a1"},
      {"{% macro m() %}{{ caller() }}{% endmacro %}{% for x in [1, [2, 3]] recursive %}{% call m() %}{% if x is iterable %}[{{ loop(x) }}]{% else %}{{ x }}@{{ loop.depth }}{% endif %}{% endcall %}{% endfor %}",
       "",
       "1@1[2@23@2]"},
      {"{% set ns = namespace(n=0) %}{% macro m() %}{{ caller() }}{{ caller() }}{% endmacro %}{% call m() %}{% set ns.n = ns.n + 1 %}{{ ns.n }}{% endcall %}",
       "",
       "12"},
      {"{% macro tool_block(t) %}<tool name=\"{{ t.name }}\">{{ caller(t.parameters|tojson) }}</tool>{% endmacro %}{% for t in tools %}{% call(params) tool_block(t) %}{{ params }}{% endcall %}\n{% endfor %}",
       "{\"tools\": [{\"name\": \"get\", \"parameters\": {\"q\": \"str\"}}, {\"name\": \"put\", \"parameters\": {}}]}",
       "<tool name=\"get\">{\"q\": \"str\"}</tool><tool name=\"put\">{}</tool>"},
  });
}

// `for ... recursive`: loop(items) renders the body over items one level deeper
// (loop.depth), with its own loop.index/length, the filter, break/continue and else.
TEST(JinjaMatchesJinja2, RecursiveLoops) {
  expect_renders({
      {"{% for x in [1, [2, [3, 4]], 5] recursive %}{% if x is iterable %}{{ loop(x) }}{% else %}{{ x }}@{{ loop.depth }}/{{ loop.depth0 }}/{{ loop.index }} {% endif %}{% endfor %}",
       "",
       "1@1/0/1 2@2/1/1 3@3/2/1 4@3/2/2 5@1/0/3 "},
      {"{% for item in items recursive %}<li>{{ item.name }}{% if item.children %}<ul>{{ loop(item.children) }}</ul>{% endif %}</li>{% endfor %}",
       "{\"items\": [{\"name\": \"a\", \"children\": [{\"name\": \"b\", \"children\": [{\"name\": \"c\"}]}]}, {\"name\": \"d\"}]}",
       "<li>a<ul><li>b<ul><li>c</li></ul></li></ul></li><li>d</li>"},
      {"{% for k, v in tree.items() recursive %}{{ '  ' * loop.depth0 }}{{ k }}{% if v is mapping %}:\n{{ loop(v.items()) }}{% else %}={{ v }}\n{% endif %}{% endfor %}",
       "{\"tree\": {\"a\": {\"b\": 1, \"c\": {\"d\": 2}}, \"e\": 3}}",
       "a:\n  b=1\n  c:\n    d=2\ne=3\n"},
      {"{% for x in [1, [2]] recursive %}{{ loop.index }}/{{ loop.length }}{{ loop.first }}{{ loop.last }}{{ loop.revindex }}{% if x is iterable %}<{{ loop(x) }}>{% endif %} {% endfor %}",
       "",
       "1/2TrueFalse2 2/2FalseTrue1<1/1TrueTrue1 > "},
      {"{% for x in [1, [2, 3]] recursive %}{{ loop.cycle('a', 'b') }}{{ loop.previtem }}|{{ loop.nextitem }}{% if x is iterable %}<{{ loop(x) }}>{% endif %} {% endfor %}",
       "",
       "a|[2, 3] b1|<a|3 b2| > "},
      {"{% for x in [0, [1, 2, 3, 4], 5, 6] recursive %}{% if x is iterable %}({{ loop(x) }}){% elif x == 3 %}{% break %}{% elif x == 2 %}{% continue %}{% else %}{{ x }}{% endif %}{% endfor %}",
       "",
       "0(1)56"},
      {"{% for x in [0, [1, 2, 3, [4, 2, 5]], 6] if x != 2 recursive %}{% if x is iterable %}({{ loop(x) }}){% else %}{{ x }}{% endif %}{% endfor %}",
       "",
       "0(13(45))6"},
      {"{% for x in [[1, 2], []] recursive %}{% if x is iterable %}({{ loop(x) }}){% else %}{{ x }}{% endif %}{% else %}empty{% endfor %}",
       "",
       "(12)(empty)"},
      {"{% set y = 7 %}{% for x in [1, [2]] recursive %}{% set z = x %}{{ y }}{% if x is iterable %}{{ loop(x) }}{% endif %}{{ z }} {% endfor %}",
       "",
       "71 772 [2] "},
      {"{% for x in [1, [2]] recursive %}{% set outer = loop %}{% if x is iterable %}{% for y in x %}{{ outer([y * 10]) }}{{ loop.depth }}{% endfor %}{% endif %}{{ x }}@{{ loop.depth }} {% endfor %}",
       "",
       "1@1 20@2 1[2]@1 "},
      {"{% macro tree(items) %}{% for x in items recursive %}{{ '  ' * loop.depth0 }}- {{ x.n }}\n{{ loop(x.c or []) }}{% endfor %}{% endmacro %}{{ tree(t) }}{{ tree([{'n': 'z'}]) }}",
       "{\"t\": [{\"n\": \"a\", \"c\": [{\"n\": \"b\", \"c\": [{\"n\": \"c\"}]}]}, {\"n\": \"d\"}]}",
       "- a\n  - b\n    - c\n- d\n- z\n"},
      {"{% for a, b in [[1, [[2, [[3, []]]]]], [4, []]] recursive %}{{ a }}@{{ loop.depth }}{{ loop(b) }} {% endfor %}",
       "",
       "1@12@23@3   4@1 "},
      {"{% for x in [1, [2]] recursive %}[{{ loop(iterable=[]) }}]{% if x is iterable %}{{ loop(x) }}{% endif %}{% endfor %}",
       "",
       "[][][]"},
      {"{% for x in [1] recursive %}[{{ loop(undefined_name) }}]{{ loop is callable }}{% endfor %}",
       "",
       "[]True"},
      {"{% for m in messages recursive %}{{ m.role }}:{% if m.content is string %}{{ m.content }}{% else %}{{ loop(m.content) }}{% endif %};{% endfor %}",
       "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": [{\"role\": \"text\", \"content\": \"a\"}, {\"role\": \"image\", \"content\": \"b\"}]}]}",
       "user:hi;assistant:text:a;image:b;;"},
      {"{% set ns = namespace(count=0) %}{% for x in [1, [2, [3]]] recursive %}{% set ns.count = ns.count + 1 %}{% if x is iterable %}{{ loop(x) }}{% endif %}{% endfor %}{{ ns.count }}",
       "",
       "5"},
  });
}

TEST(JinjaMatchesJinja2, LoopChangedCyclerJoiner) {
  expect_renders({
      {"{% for x in [1, 2, 2, 1, 1, 3] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}",
       "",
       "1213"},
      {"{% for x in [1, 2, 3] %}{{ loop.changed() }} {% endfor %}",
       "",
       "True False False "},
      {"{% for x in [1, 1, 2] %}{{ loop.changed(x, 'a') }}{{ loop.changed(x) }} {% endfor %}",
       "",
       "TrueTrue TrueTrue TrueTrue "},
      {"{% for x in [[1], [1], (1,), 1.0, 1, true] %}{{ loop.changed(x) }} {% endfor %}",
       "",
       "True False True True False False "},
      {"{% for m in messages %}{% if loop.changed(m.role) %}<{{ m.role }}>{% endif %}{{ m.content }}{% endfor %}",
       "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"user\", \"content\": \"b\"}, {\"role\": \"assistant\", \"content\": \"c\"}, {\"role\": \"user\", \"content\": \"d\"}]}",
       "<user>ab<assistant>c<user>d"},
      {"{% for x in [1, [1]] recursive %}{{ loop.changed(1) }} {% if x is iterable %}{{ loop(x) }}{% endif %}{% endfor %}",
       "",
       "True False True "},
      {"{% for i in [1, 2] %}{% for j in [1, 1] %}{{ loop.changed(j) }} {% endfor %}{% endfor %}",
       "",
       "True False True False "},
      {"{% set c = cycler('a', 'b', 'c') %}{% for i in range(5) %}{{ c.next() }}{% endfor %}|{{ c.current }}|{{ c.reset() }}|{{ c.current }}|{{ c.items }}|{{ c.pos }}",
       "",
       "abcab|c|None|a|('a', 'b', 'c')|0"},
      {"{% set c = cycler(1) %}{{ c.next() }}{{ c.next() }}{{ c.current }}",
       "",
       "111"},
      {"{% set c = cycler([1, 2], none) %}{{ c.next() }} {{ c.next() }} {{ c.next() }} {{ c.pos }}",
       "",
       "[1, 2] None [1, 2] 1"},
      {"{% set c = cycler('odd', 'even') %}{% macro m() %}{{ c.next() }}{% endmacro %}{{ m() }} {{ m() }} {{ c.current }}",
       "",
       "odd even odd"},
      {"{% set c = cycler('r', 'g') %}{% for x in [1, 2, 3] %}{% set d = c %}{{ d.next() }}{% endfor %}{{ c.current }}",
       "",
       "rgrg"},
      {"{% set c = cycler(1, 2) %}{{ c is callable }} {{ c.next is callable }} {{ c.items|length }} {{ c.missing }}|",
       "",
       "False True 2 |"},
      {"{% set j = joiner() %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}",
       "",
       "1, 2, 3"},
      {"{% set j = joiner(' | ') %}{% for x in ['a', 'b'] %}{{ j() }}{{ x }}{% endfor %} {% set k = joiner(sep='-') %}{% for x in [1, 2, 3] %}{{ k() }}{{ x }}{% endfor %}",
       "",
       "a | b 1-2-3"},
      {"{% set j = joiner(1) %}[{{ j() }}][{{ j() }}] {{ j() is string }} {{ joiner(none)() }}|",
       "",
       "[][1] False |"},
      {"{% set j = joiner() %}{{ j.sep }}|{{ j.used }}{{ j() }}{{ j.used }}|{{ j is callable }} {{ joiner is callable }} {{ cycler is defined }}",
       "",
       ", |FalseTrue|True True True"},
      {"{% set j = joiner() %}{% for x in [1, 2] %}{% set j2 = joiner('+') %}{{ j2() }}{{ j() }}{{ x }}{% endfor %}",
       "",
       "1, 2"},
      {"{% set j = joiner(', ') %}{% for t in tools %}{% if t.enabled %}{{ j() }}{{ t.name }}{% endif %}{% endfor %}",
       "{\"tools\": [{\"name\": \"a\", \"enabled\": false}, {\"name\": \"b\", \"enabled\": true}, {\"name\": \"c\", \"enabled\": true}]}",
       "b, c"},
  });
}

TEST(JinjaErrors, LoaderTagsAreRefusedAtParseTime) {
  // Hugging Face renders without a template loader: these tags could never work there.
  const std::string why =
      "': chat templates are rendered without a template loader, so a template cannot include, import or extend "
      "another";
  EXPECT_EQ(error_of<TemplateSyntaxError>("a\n{% include 'x.jinja' %}"), "t:2: Encountered unsupported tag 'include" + why);
  EXPECT_EQ(error_of<TemplateSyntaxError>("{% import 'x.jinja' as x %}"), "t:1: Encountered unsupported tag 'import" + why);
  EXPECT_EQ(error_of<TemplateSyntaxError>("{% from 'x.jinja' import m %}"), "t:1: Encountered unsupported tag 'from" + why);
  EXPECT_EQ(error_of<TemplateSyntaxError>("\n\n{% extends 'base.jinja' %}"), "t:3: Encountered unsupported tag 'extends" + why);
  EXPECT_EQ(error_of<TemplateSyntaxError>("{% for m in messages %}\n{% block b %}{% endblock %}{% endfor %}"),
            "t:2: Encountered unsupported tag 'block" + why);
  // Even where rendering would never reach them.
  EXPECT_EQ(error_of<TemplateSyntaxError>("{% if false %}\n{% include 'x' %}{% endif %}"),
            "t:2: Encountered unsupported tag 'include" + why);
  EXPECT_EQ(error_of<TemplateSyntaxError>("{% frobnicate %}"), "t:1: Encountered unknown tag 'frobnicate'.");
}

TEST(JinjaErrors, CallBlockMistakes) {
  // Jinja2 passes caller= only to a macro whose body uses the name `caller` first.
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% macro m() %}x{% endmacro %}\n{% call m() %}body{% endcall %}"),
            "t:2: macro 'm' was invoked with two values for the special caller argument. This is most likely a bug.");
  EXPECT_EQ(error_of<TemplateRuntimeError>(
                "{% macro m() %}{% set caller = 1 %}{{ caller }}{% endmacro %}{% call m() %}x{% endcall %}"),
            "t:1: macro 'm' was invoked with two values for the special caller argument. This is most likely a bug.");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% macro m() %}{{ caller() }}{% endmacro %}{{ m() }}"), "t:1: No caller defined");
  // The body is an anonymous macro: Jinja2 names it None.
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% macro m() %}{{ caller(1) }}{% endmacro %}{% call m() %}x{% endcall %}"),
            "t:1: macro None takes not more than 0 argument(s)");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% macro m() %}{{ caller(z=1) }}{% endmacro %}{% call(a) m() %}x{% endcall %}"),
            "t:1: macro None takes no keyword argument 'z'");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% macro m(a) %}{{ caller() }}{% endmacro %}{% call m(1, 2) %}x{% endcall %}"),
            "t:1: macro 'm' takes not more than 1 argument(s)");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, a=2) }}"),
            "t:1: macro 'm' takes no keyword argument 'a'");
  EXPECT_EQ(error_of<TemplateSyntaxError>("{% macro m(caller) %}{{ caller() }}{% endmacro %}"),
            "t:1: When defining macros or call blocks the special \"caller\" argument must be omitted or be given a "
            "default.");
  EXPECT_EQ(error_of<TemplateSyntaxError>("{% call x %}body{% endcall %}"), "t:1: expected call");
  EXPECT_EQ(error_of<TemplateSyntaxError>("{% call(a=1, b) m() %}{% endcall %}"),
            "t:1: non-default argument follows default argument");
  EXPECT_EQ(error_of<TemplateSyntaxError>("{% call m() %}x"),
            "t:1: Unexpected end of template. Jinja was looking for the following tags: 'endcall'. The innermost block "
            "that needs to be closed is 'call'.");
  EXPECT_EQ(error_of<TemplateSyntaxError>("{% for x in [1] %}{% call m() %}{% break %}{% endcall %}{% endfor %}"),
            "t:1: 'break' outside loop");
}

TEST(JinjaErrors, LoopCallCyclerAndJoinerMistakes) {
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% for x in [1] %}{{ loop([1]) }}{% endfor %}"),
            "t:1: The loop must have the 'recursive' marker to be called recursively.");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% for x in [1] recursive %}{{ loop() }}{% endfor %}"),
            "t:1: LoopContext.__call__() missing 1 required positional argument: 'iterable'");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% for x in [1] recursive %}\n{{ loop(5) }}{% endfor %}"),
            "t:2: 'int' object is not iterable");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% for x in [1] %}{{ loop.changed(a=1) }}{% endfor %}"),
            "t:1: LoopContext.changed() got an unexpected keyword argument 'a'");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% set c = cycler() %}"), "t:1: at least one item has to be provided");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% set c = cycler(1, 2) %}{{ c.next(1) }}"),
            "t:1: Cycler.next() takes 1 positional argument but 2 were given");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% set c = cycler(1, 2) %}{{ c() }}"), "t:1: 'Cycler' object is not callable");
  // Only a namespace takes attribute assignments; a cycler or `loop` does not.
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% set c = cycler(1, 2) %}{% set c.pos = 1 %}"),
            "t:1: cannot assign attribute on non-namespace object");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% for x in [1] %}{% set loop.x = 1 %}{% endfor %}"),
            "t:1: cannot assign attribute on non-namespace object");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% set j = joiner() %}{{ j(1) }}"),
            "t:1: Joiner.__call__() takes 1 positional argument but 2 were given");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% set j = joiner('a', 'b') %}"),
            "t:1: Joiner.__init__() takes from 1 to 2 positional arguments but 3 were given");
}

TEST(JinjaErrors, CallersAndLoopsCannotOutliveTheirBlock) {
  // While its block runs, a caller kept in a namespace works as in Jinja2...
  EXPECT_EQ(render("{% set ns = namespace(c=none) %}{% macro keep() %}{% set ns.c = caller %}{{ ns.c() }}{% endmacro %}"
                   "{% call keep() %}body{% endcall %}"),
            "body");
  EXPECT_EQ(render("{% set ns = namespace(l=none) %}{% for x in [1, [2]] recursive %}{% if loop.first %}"
                   "{% set ns.l = loop %}{% endif %}{% if x is iterable %}{{ ns.l(x) }}{% else %}{{ x }}{% endif %}"
                   "{% endfor %}"),
            "12");
  // ...but after it, the scopes it renders among are gone: an error, where Jinja2 would
  // still render it.
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% set ns = namespace(c=none) %}{% macro keep() %}{% set ns.c = caller %}"
                                           "{% endmacro %}{% call keep() %}body{% endcall %}\n{{ ns.c() }}"),
            "t:2: caller() of the call block on line 1 was called after that block ended: a caller cannot be kept for "
            "later");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% set ns = namespace(l=none) %}\n{% for x in [1] recursive %}"
                                           "{% set ns.l = loop %}{% endfor %}{{ ns.l([2]) }}"),
            "t:2: loop() of the recursive for loop on line 2 was called after that loop ended: a loop cannot be kept "
            "for later");
}

TEST(JinjaLimits, RecursiveLoopsAndCallBlocksAreBounded) {
  // loop(...) counts as a call, like a macro's.
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}"),
            "t:1: maximum recursion depth exceeded: more than 256 nested recursive loop calls");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% macro m() %}{% call m() %}{{ caller() }}{% endcall %}{% endmacro %}{{ m() }}"),
            "t:1: maximum recursion depth exceeded: more than 256 nested macro calls");
  RenderLimits limits;
  limits.max_call_depth = 10;
  const std::string flatten =
      "{% for x in items recursive %}{% if x is iterable %}{{ loop(x) }}{% else %}{{ x }}@{{ loop.depth }}{% endif %}"
      "{% endfor %}";
  EXPECT_EQ(render(flatten, R"({"items": [[[[[[[[[[[1]]]]]]]]]]]})", limits), "1@11");  // 10 calls deep
  EXPECT_EQ(error_of<TemplateRuntimeError>(flatten, R"({"items": [[[[[[[[[[[[1]]]]]]]]]]]]})", limits),
            "t:1: maximum recursion depth exceeded: more than 10 nested recursive loop calls");
  // Iterations at every level count toward the render's total.
  limits.max_loop_iterations = 50;
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% for x in range(10) recursive %}{% if loop.depth < 3 %}{{ loop(range(10)) }}"
                                           "{% endif %}{% endfor %}",
                                           "", limits),
            "t:1: more than 50 loop iterations");
}

}  // namespace
}  // namespace dspark::jinja
