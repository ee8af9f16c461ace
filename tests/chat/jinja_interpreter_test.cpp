// Unit tests of the Jinja interpreter (src/chat/jinja_*). The JinjaMatchesJinja2 tables
// were rendered by Jinja2 3.1.6 set up as Hugging Face's apply_chat_template does
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, HF tojson):
// each expected string is Jinja2's output, byte for byte. Macros, call blocks and recursive
// loops are in jinja_control_flow_test.cpp.
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chat/jinja_lexer.h"
#include "chat/jinja_template.h"
#include "chat/jinja_test_support.h"

namespace dspark::jinja {
namespace {

using testing::error_of;
using testing::expect_renders;
using testing::render;
using testing::RenderCase;

// ---- lexer ----

TEST(JinjaLexer, TokensCarryTheirLine) {
  std::vector<Token> tokens = tokenize("a\n{{ x }}\n\n{% if y %}{# c\n #}z", "t");
  ASSERT_GE(tokens.size(), 9u);
  EXPECT_EQ(tokens[0].type, TokenType::kText);
  EXPECT_EQ(tokens[0].line, 1);
  EXPECT_EQ(tokens[1].type, TokenType::kVariableBegin);
  EXPECT_EQ(tokens[1].line, 2);
  EXPECT_EQ(tokens[2].text, "x");
  EXPECT_EQ(tokens[2].line, 2);
  EXPECT_EQ(tokens[5].type, TokenType::kBlockBegin);
  EXPECT_EQ(tokens[5].line, 4);
  EXPECT_EQ(tokens[6].text, "if");
  const Token& z = tokens[tokens.size() - 2];
  EXPECT_EQ(z.text, "z");
  EXPECT_EQ(z.line, 5);
  EXPECT_EQ(tokens.back().type, TokenType::kEof);
}

TEST(JinjaLexer, StringEscapesAndOperators) {
  std::vector<Token> tokens = tokenize(R"({{ 'a\'b\n\u00e9' ~ x // 2 ** 3 != 4 }})", "t");
  EXPECT_EQ(tokens[1].type, TokenType::kString);
  EXPECT_EQ(tokens[1].text, "a'b\n\xc3\xa9");
  std::vector<std::string> ops;
  for (const Token& t : tokens)
    if (t.type == TokenType::kOperator) ops.push_back(t.text);
  EXPECT_EQ(ops, (std::vector<std::string>{"~", "//", "**", "!="}));
}

TEST(JinjaLexer, BracesInsideExpressionsDoNotEndTheTag) {
  EXPECT_EQ(render("{{ {'a': {'b': 1}} }}"), "{'a': {'b': 1}}");
  EXPECT_EQ(render("{{ {'a': 1}['a'] }}"), "1");
}

// ---- Jinja2 reference tables ----

TEST(JinjaMatchesJinja2, WhitespaceControl) {
  expect_renders({
      {"{% if true %}\n  yes\n{% endif %}\nend",
       "",
       "  yes\nend"},
      {"  {% if true %}\n    x\n  {% endif %}\ny",
       "",
       "    x\ny"},
      {"a  {% if true %}b{% endif %}  c",
       "",
       "a  b  c"},
      {"{{ 'a' }}  {% if true %}b{% endif %}",
       "",
       "a  b"},
      {"line\n    {# comment #}\nnext",
       "",
       "line\nnext"},
      {"a\n  {%- if true -%}\n  b  \n  {%- endif -%}\n  c",
       "",
       "abc"},
      {"x  {{- ' y ' -}}  z",
       "",
       "x y z"},
      {"  {%+ if true %}k{% endif %}",
       "",
       "  k"},
      {"{% if true +%}\nkeep{% endif %}",
       "",
       "\nkeep"},
      {"{% raw %}{{ not parsed }} {% if %}{% endraw %}!",
       "",
       "{{ not parsed }} {% if %}!"},
      {"text\n",
       "",
       "text"},
      {"text\n\n",
       "",
       "text\n"},
      {"a\r\nb\rc",
       "",
       "a\nb\nc"},
      {"{% for i in [1,2] %}\n  - {{ i }}\n{% endfor %}\n",
       "",
       "  - 1\n  - 2\n"},
      {"{{ 'x' }}\n{{ 'y' }}",
       "",
       "x\ny"},
      {"\t{% set a = 1 %}\t{{ a }}",
       "",
       "\t1"},
  });
}

TEST(JinjaMatchesJinja2, Expressions) {
  expect_renders({
      {"{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}",
       "",
       "7 9 64 4"},
      {"{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7 / 2 }} {{ 4 / 2 }}",
       "",
       "3 -4 2 -2 3.5 2.0"},
      {"{{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1 + 1.5 }} {{ true + 1 }} {{ 2 * 0.5 }}",
       "",
       "3.0 0.5 2.5 2 1.0"},
      {"{{ 'ab' * 3 }} {{ [1] * 2 }} {{ 'a' + 'b' }} {{ [1] + [2, 3] }}",
       "",
       "ababab [1, 1] ab [1, 2, 3]"},
      {"{{ 'a' ~ 1 ~ none ~ true ~ 1.0 }}",
       "",
       "a1NoneTrue1.0"},
      {"{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }}",
       "",
       "True False True True True"},
      {"{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ not 1 in [1] }}",
       "",
       "True True True True False"},
      {"{{ 1 and 'x' }} {{ 0 and 'x' }} {{ 0 or 'y' }} {{ '' or [] }} {{ none or 0 }}",
       "",
       "x 0 y [] 0"},
      {"{{ 'yes' if x else 'no' }} {{ 'a' if false }}|{{ 1 if 0 else 2 if 0 else 3 }}",
       "{\"x\": [0]}",
       "yes |3"},
      {"{{ 'it\\'s' }} {{ \"q\\\"q\" }} {{ 'a\\tb' }} {{ '\\u00e9\\x41' }} {{ 'a' 'b' }}",
       "",
       "it's q\"q a\tb éA ab"},
      {"{{ [1, 2, 3][-1] }} {{ 'hello'[1:3] }} {{ [1, 2, 3, 4][::2] }} {{ [1, 2, 3][::-1] }} {{ 'abc'[-2:] }}",
       "",
       "3 el [1, 3] [3, 2, 1] bc"},
      {"{{ 'héllo'[1] }} {{ 'héllo'[:2] }} {{ 'héllo'|length }}",
       "",
       "é hé 5"},
      {"{{ d.a }} {{ d['a'] }} {{ d.b.c }} {{ l[0] }} {{ l.1 }}",
       "{\"d\": {\"a\": 1, \"b\": {\"c\": 2}}, \"l\": [5, 6]}",
       "1 1 2 5 6"},
      {"{{ (1, 2) }} {{ (1,) }} {{ () }} {{ 1, 2 }}",
       "",
       "(1, 2) (1,) () (1, 2)"},
      {"{{ {'a': 1, 'b': [true, none]} }} {{ [] }} {{ {} }}",
       "",
       "{'a': 1, 'b': [True, None]} [] {}"},
      {"{{ 1e3 }} {{ 1_000 }} {{ 0.5 }} {{ -3 }} {{ +3 }}",
       "",
       "1000.0 1000 0.5 -3 3"},
      {"{{ True }} {{ False }} {{ None }} {{ true }} {{ none }}",
       "",
       "True False None True None"},
  });
}

TEST(JinjaMatchesJinja2, PythonStrOfValues) {
  expect_renders({
      {"{{ x }}",
       "{\"x\": 1.0}",
       "1.0"},
      {"{{ x }}",
       "{\"x\": 0.1}",
       "0.1"},
      {"{{ x }}",
       "{\"x\": 1e+20}",
       "1e+20"},
      {"{{ x }}",
       "{\"x\": 1e+16}",
       "1e+16"},
      {"{{ x }}",
       "{\"x\": 1000000000000000.0}",
       "1000000000000000.0"},
      {"{{ x }}",
       "{\"x\": 0.0001}",
       "0.0001"},
      {"{{ x }}",
       "{\"x\": 1e-05}",
       "1e-05"},
      {"{{ x }}",
       "{\"x\": -2.5e-10}",
       "-2.5e-10"},
      {"{{ x }}",
       "{\"x\": 123456789.123}",
       "123456789.123"},
      {"{{ x }}",
       "{\"x\": 3.141592653589793}",
       "3.141592653589793"},
      {"{{ x }}",
       "{\"x\": -0.0}",
       "-0.0"},
      {"{{ x }}",
       "{\"x\": [\"it's\", \"say \\\"hi\\\"\", \"both ' \\\"\", \"back\\\\slash\", \"nl\\n\", \"é\", \" \"]}",
       "[\"it's\", 'say \"hi\"', 'both \\' \"', 'back\\\\slash', 'nl\\n', 'é', '\\xa0']"},
      {"{{ x }}",
       "{\"x\": {\"k\": [1, 2.5, null, true, {\"n\": \"v\"}]}}",
       "{'k': [1, 2.5, None, True, {'n': 'v'}]}"},
      {"{{ x }}",
       "{\"x\": 12345678901234}",
       "12345678901234"},
      {"{{ x|string }}|{{ x|length }}",
       "{\"x\": [1, [2, [3]]]}",
       "[1, [2, [3]]]|2"},
  });
}

TEST(JinjaMatchesJinja2, Filters) {
  expect_renders({
      {"{{ '  a b  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ '　a '|trim }}",
       "",
       "a b|a|a"},
      {"{{ [1, 2]|length }} {{ 'abc'|count }} {{ {'a': 1}|length }} {{ x|length }}",
       "{\"x\": \"hé\"}",
       "2 3 1 2"},
      {"{% for k, v in {'a': 1, 'b': 2}|items %}{{ k }}={{ v }};{% endfor %}",
       "",
       "a=1;b=2;"},
      {"{{ 'abc'|list }} {{ {'a': 1}|list }} {{ (1, 2)|list }}",
       "",
       "['a', 'b', 'c'] ['a'] [1, 2]"},
      {"{{ [1, 2, 3]|join }} {{ [1, 2, 3]|join(', ') }} {{ users|join(',', attribute='name') }}",
       "{\"users\": [{\"name\": \"a\"}, {\"name\": \"b\"}]}",
       "123 1, 2, 3 a,b"},
      {"{{ users|selectattr('role', 'equalto', 'user')|list }}",
       "{\"users\": [{\"role\": \"user\", \"n\": 1}, {\"role\": \"bot\"}, {\"role\": \"user\", \"n\": 2}]}",
       "[{'role': 'user', 'n': 1}, {'role': 'user', 'n': 2}]"},
      {"{{ users|rejectattr('role', 'eq', 'user')|map(attribute='role')|list }} {{ users|selectattr('n')|list|length }}",
       "{\"users\": [{\"role\": \"user\", \"n\": 1}, {\"role\": \"bot\"}]}",
       "['bot'] 1"},
      {"{{ [1, 2, 3, 4]|select('even')|list }} {{ [1, 2, 3]|reject('odd')|list }} {{ [0, 1, '', 'a']|select|list }} {{ [1, 5, 9]|select('gt', 4)|list }}",
       "",
       "[2, 4] [2] [1, 'a'] [5, 9]"},
      {"{{ ['a', 'code_interpreter', 'b']|reject('equalto', 'code_interpreter')|join(', ') }}",
       "",
       "a, b"},
      {"{{ [1, 2]|map('string')|join('-') }} {{ ['a', 'b']|map('upper')|list }} {{ [{'a': 1}, {}]|map(attribute='a', default=0)|list }}",
       "",
       "1-2 ['A', 'B'] [1, 0]"},
      {"{{ 'Hello'|upper }} {{ 'Hello'|lower }} {{ 'hELLO wORLD'|capitalize }} {{ 'hello big-world (x)'|title }}",
       "",
       "HELLO hello Hello world Hello Big-World (X)"},
      {"{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }}",
       "",
       "bbb bba"},
      {"{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} {{ []|first }}|",
       "",
       "1 3 a |"},
      {"{{ x|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|d('n') }} {{ 0|default(5, boolean=true) }}",
       "",
       "d  d None 5"},
      {"{{ '42'|int }} {{ ' 7 '|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(9) }} {{ 3.9|int }} {{ true|int }}",
       "",
       "42 7 4 0 9 3 1"},
      {"{{ '1.5'|float }} {{ 2|float }} {{ 'x'|float }} {{ -3|abs }} {{ -2.5|abs }}",
       "",
       "1.5 2.0 0.0 3 2.5"},
      {"{{ 2.5|round }} {{ 3.5|round }} {{ 3|round }} {{ 2.675|round(2) }} {{ 1.21|round(1, 'ceil') }} {{ 1.29|round(1, 'floor') }}",
       "",
       "2.0 4.0 3 2.67 1.3 1.2"},
      {"{{ '<a href=\"x\">&\\'</a>'|escape }} {{ '<b>'|e }} {{ '<i>'|safe }}",
       "",
       "&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt; &lt;b&gt; <i>"},
      {"{{ {'b': 1, 'A': 2, 'c': 0}|dictsort }} {{ {'b': 1, 'a': 2}|dictsort(by='value') }} {{ {'b': 1, 'a': 2}|dictsort(reverse=true) }}",
       "",
       "[('A', 2), ('b', 1), ('c', 0)] [('b', 1), ('a', 2)] [('b', 1), ('a', 2)]"},
      {"{{ ['a', 'B', 'b', 'a']|unique|list }} {{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }}",
       "",
       "['a', 'B'] [1, 2, 3] [3, 2, 1] ['A', 'b', 'c']"},
      {"{{ users|sort(attribute='age')|map(attribute='n')|join }}",
       "{\"users\": [{\"n\": \"x\", \"age\": 3}, {\"n\": \"y\", \"age\": 1}, {\"n\": \"z\", \"age\": 2}]}",
       "yzx"},
      {"{{ [1, 2, 3]|sum }} {{ [1.5, 2]|sum }} {{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ ['b', 'A']|max }} {{ users|sum(attribute='v') }}",
       "{\"users\": [{\"v\": 1}, {\"v\": 2}]}",
       "6 3.5 1 3 b 3"},
      {"{{ 'abc'|reverse }} {{ [1, 2, 3]|reverse|list }} {{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 0)|list }}",
       "",
       "cba [3, 2, 1] [[1, 2], [3, 4], [5]] [[1, 2], [3, 0]]"},
      {"{{ 42|string ~ '!' }} {{ none|string }} {{ [1]|string }}",
       "",
       "42! None [1]"},
      {"{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(1, blank=true) }}",
       "",
       "a\n  b\n\n  c|  a\n  b|a\n \n b"},
      {"{{ d|attr('a') }} {{ 'one two  three'|wordcount }}",
       "{\"d\": {\"a\": 5}}",
       " 3"},
      {"{% filter upper %}abc {{ 'd' }}{% endfilter %}",
       "",
       "ABC D"},
      {"{% set t | trim %}  padded  {% endset %}[{{ t }}]",
       "",
       "[padded]"},
  });
}

TEST(JinjaMatchesJinja2, Tests) {
  expect_renders({
      {"{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ none is none }} {{ 0 is none }}",
       "{\"x\": 0}",
       "True False True True False"},
      {"{{ 'a' is string }} {{ 1 is string }} {{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ 'x' is number }}",
       "",
       "True False True True True False"},
      {"{{ 1 is integer }} {{ true is integer }} {{ 1.0 is integer }} {{ 1.0 is float }} {{ true is boolean }} {{ 1 is boolean }}",
       "",
       "True False False True True False"},
      {"{{ true is true }} {{ 1 is true }} {{ false is false }} {{ {} is mapping }} {{ [] is mapping }}",
       "",
       "True False True True False"},
      {"{{ 'a' is iterable }} {{ [] is iterable }} {{ {} is iterable }} {{ 1 is iterable }} {{ none is iterable }} {{ y is iterable }}",
       "",
       "True True True False False True"},
      {"{{ 'a' is sequence }} {{ [] is sequence }} {{ 1 is sequence }} {{ range is callable }} {{ 'x' is callable }}",
       "",
       "True True False True False"},
      {"{{ 1 is equalto 1 }} {{ 1 is eq 2 }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 2 is gt 1 }} {{ 2 is ge 2 }} {{ 2 is le 1 }}",
       "",
       "True False True True True True False"},
      {"{{ 2 is in [1, 2] }} {{ 3 is odd }} {{ 3 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ none is sameas none }}",
       "",
       "True True False True False True"},
      {"{{ x is not defined }} {{ 1 is not string }} {{ not x is defined }}",
       "",
       "True True True"},
      {"{{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'upper' is filter }} {{ 'odd' is test }} {{ 'nope' is filter }}",
       "",
       "True True True True False"},
  });
}

TEST(JinjaMatchesJinja2, Loops) {
  expect_renders({
      {"{% for x in 'ab' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
       "",
       "1021TrueFalse2;2110FalseTrue2;"},
      {"{% for x in [1, 2, 3] %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}|{% endfor %}",
       "",
       "<1>2|1<2>3|2<3>|"},
      {"{% for x in [1, 2, 3] %}{{ loop.cycle('odd', 'even') }} {% endfor %}",
       "",
       "odd even odd "},
      {"{% for x in [] %}{{ x }}{% else %}empty{% endfor %}",
       "",
       "empty"},
      {"{% for x in range(10) if x is odd %}{{ x }}{{ ',' if not loop.last }}{% endfor %}",
       "",
       "1,3,5,7,9"},
      {"{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}",
       "",
       "0134"},
      {"{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %} {% for k, v in {'x': 1}.items() %}{{ k }}{{ v }}{% endfor %}",
       "",
       "1234 x1"},
      {"{% for i in range(2) %}{% for j in range(2) %}{{ i }}{{ j }}{{ loop.index }} {% endfor %}{{ loop.index }};{% endfor %}",
       "",
       "001 012 1;101 112 2;"},
      {"{% for x in {'b': 1, 'a': 2} %}{{ x }}{% endfor %} {% for c in 'hé' %}[{{ c }}]{% endfor %} {% for x in undefined_var %}no{% endfor %}",
       "",
       "ba [h][é] "},
      {"{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(3, 0, -1)|list }}",
       "",
       "[0, 1, 2] [1, 3, 5] [3, 2, 1]"},
      {"{% for x in [1, 2] %}{% set y = x * 10 %}{{ y }}{% endfor %}[{{ y }}] [{{ x }}]",
       "",
       "1020[] []"},
  });
}

TEST(JinjaMatchesJinja2, Scoping) {
  expect_renders({
      {"{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = i + 10 %}{{ x }} {% endfor %}{{ x }}",
       "",
       "111 112 1"},
      {"{% set ns = namespace(total=0, found=false) %}{% for i in [1, 2, 3] %}{% set ns.total = ns.total + i %}{% if i == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.total }} {{ ns.found }}",
       "",
       "6 True"},
      {"{% set ns = namespace() %}{% set ns.a = 'v' %}{{ ns.a }} {{ ns.missing }}|",
       "",
       "v |"},
      {"{% if true %}{% set inner = 'set in if' %}{% endif %}{{ inner }}",
       "",
       "set in if"},
      {"{% set messages = messages[1:] %}{{ messages|length }}",
       "{\"messages\": [1, 2, 3]}",
       "2"},
      {"{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]",
       "",
       "3[]"},
      {"{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set t = 1, 2 %}{{ t }}",
       "",
       "12 (1, 2)"},
      {"{% set d = {'k': 'v'} %}{% set x %}block {{ d.k }}{% endset %}{{ x }}",
       "",
       "block v"},
  });
}

TEST(JinjaMatchesJinja2, StringDictListMethods) {
  expect_renders({
      {"{{ '  a  '.strip() }}|{{ 'xxay'.lstrip('x') }}|{{ '  a  '.rstrip() }}|{{ 'a'.strip('') }}",
       "",
       "a|ay|  a|a"},
      {"{{ 'a b  c'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ 'a b c'.rsplit(' ', 1) }} {{ '  x  y '.split(None, 1) }}",
       "",
       "['a', 'b', 'c'] ['a', 'b', '', 'c'] ['a', 'b,c'] ['a b', 'c'] ['x', 'y ']"},
      {"{{ 'a</think>b</think>c'.split('</think>')[-1] }} {{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }}",
       "",
       "c True True"},
      {"{{ 'aBc'.upper() }} {{ 'aBc'.lower() }} {{ 'hello wORLD x1y'.title() }} {{ 'hELLO'.capitalize() }} {{ 'aaa'.replace('a', 'b', 1) }}",
       "",
       "ABC abc Hello World X1Y Hello baa"},
      {"{{ 'abcabc'.find('c') }} {{ 'abc'.find('z') }} {{ 'abcabc'.rfind('b') }} {{ 'aXbXc'.count('X') }} {{ '-'.join(['a', 'b']) }}",
       "",
       "2 -1 4 2 a-b"},
      {"{{ '{} and {}'.format(1, 'two') }} {{ '{x}!'.format(x=3) }} {{ 'a\\nb\\r\\nc'.splitlines() }}",
       "",
       "1 and two 3! ['a', 'b', 'c']"},
      {"{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'dflt') }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}",
       "{\"d\": {\"a\": 1, \"b\": 2}}",
       "1 None dflt ['a', 'b'] [1, 2] [('a', 1), ('b', 2)]"},
      {"{{ [1, 2, 1].count(1) }} {{ [1, 2, 3].index(2) }} {{ d['items'] is callable }}",
       "{\"d\": {\"a\": 1}}",
       "2 1 True"},
      {"{{ '42'.isdigit() }} {{ 'ab'.isalpha() }} {{ 'AB'.isupper() }}",
       "",
       "True True True"},
  });
}

TEST(JinjaMatchesJinja2, ToJson) {
  expect_renders({
      {"{{ x|tojson }}",
       "{\"x\": {\"name\": \"f\", \"args\": [1, 2.5, true, null, \"s\"], \"nested\": {}, \"empty\": []}}",
       "{\"name\": \"f\", \"args\": [1, 2.5, true, null, \"s\"], \"nested\": {}, \"empty\": []}"},
      {"{{ x|tojson(indent=4) }}",
       "{\"x\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"string\"}}, \"required\": [\"a\"]}, \"e\": [], \"o\": {}}}",
       "{\n    \"name\": \"f\",\n    \"parameters\": {\n        \"type\": \"object\",\n        \"properties\": {\n            \"a\": {\n                \"type\": \"string\"\n            }\n        },\n        \"required\": [\n            \"a\"\n        ]\n    },\n    \"e\": [],\n    \"o\": {}\n}"},
      {"{{ x|tojson(indent=2) }}",
       "{\"x\": [1, [2, 3], {\"k\": null}]}",
       "[\n  1,\n  [\n    2,\n    3\n  ],\n  {\n    \"k\": null\n  }\n]"},
      {"{{ x|tojson }}",
       "{\"x\": \"café 中文 😀 line\\nbreak \\\"quoted\\\" back\\\\slash tab\\t \\u0001  \"}",
       "\"café 中文 😀 line\\nbreak \\\"quoted\\\" back\\\\slash tab\\t \\u0001  \""},
      {"{{ x|tojson(ensure_ascii=true) }}",
       "{\"x\": \"café 😀\"}",
       "\"caf\\u00e9 \\ud83d\\ude00\""},
      {"{{ x|tojson(sort_keys=true) }} {{ x|tojson(separators=(',', ':')) }}",
       "{\"x\": {\"b\": 1, \"a\": [1, 2]}}",
       "{\"a\": [1, 2], \"b\": 1} {\"b\":1,\"a\":[1,2]}"},
      {"{{ 1.0|tojson }} {{ 1e20|tojson }} {{ 'x'|tojson }} {{ none|tojson }} {{ (1, 2)|tojson }} {{ {1: 'a'}|tojson }}",
       "",
       "1.0 1e+20 \"x\" null [1, 2] {\"1\": \"a\"}"},
      {"{{ x|tojson(indent='\\t') }}",
       "{\"x\": {\"a\": [1]}}",
       "{\n\t\"a\": [\n\t\t1\n\t]\n}"},
  });
}

TEST(JinjaMatchesJinja2, UndefinedSemantics) {
  expect_renders({
      {"[{{ missing }}] [{{ d.missing }}] [{{ d['missing'] }}] [{{ l[9] }}] [{{ none.x }}] [{{ 'abc'.nope }}]",
       "{\"d\": {}, \"l\": []}",
       "[] [] [] [] [] []"},
      {"{{ missing|length }} {{ missing|list }} {{ missing|trim }}| {{ missing is iterable }} {{ missing == missing }} {{ missing ~ 'x' }}",
       "",
       "0 [] | True True x"},
      {"{{ missing|items|list }} {{ missing|join(',') }}| {{ 'a' in missing }} {{ not missing }}",
       "",
       "[] | False True"},
      {"{% if d.tool_calls %}yes{% else %}no{% endif %} {{ d.tool_calls is defined }}",
       "{\"d\": {\"role\": \"user\"}}",
       "no False"},
  });
}

TEST(JinjaMatchesJinja2, PercentFormatting) {
  expect_renders({
      {"{{ \"%s-%5.2f|%-4d|%04d|%x|%r|%%|%e|%g|%c\" % (\"a\", 3.14159, 7, 42, 255, \"q\", 12345.678, 0.0001, 65) }}",
       "",
       "a- 3.14|7   |0042|ff|'q'|%|1.234568e+04|0.0001|A"},
      {"{{ \"%(a)s and %(b)d\" % {\"a\": 1, \"b\": 2} }} {{ \"%s\" % [1, 2] }} {{ \"%s\" % (1,) }} {{ \"%.3s\" % \"abcdef\" }} {{ \"%+d\" % 5 }}",
       "",
       "1 and 2 [1, 2] 1 abc +5"},
      {"{{ \"%s, %s\"|format(\"x\", none) }} {{ \"%(x)s!\"|format(x=3) }} {{ \"%5s|%-5s|%#x|%X|%.0f\" % (\"ab\", \"cd\", 255, 255, 2.5) }}",
       "",
       "x, None 3!    ab|cd   |0xff|FF|2"},
  });
}

TEST(JinjaMatchesJinja2, UnicodeCaseMapping) {
  expect_renders({
      {"{{ x|upper }}|{{ x|lower }}|{{ x|capitalize }}|{{ x|title }}|{{ x.title() }}|{{ x.swapcase() }}|{{ x is lower }}|{{ x.isupper() }}",
       "{\"x\": \"héllo WÖRLD straße\"}",
       "HÉLLO WÖRLD STRASSE|héllo wörld straße|Héllo wörld straße|Héllo Wörld Straße|Héllo Wörld Straße|HÉLLO wörld STRASSE|False|False"},
      {"{{ x|upper }}|{{ x|lower }}|{{ x|title }}",
       "{\"x\": \"ΟΔΟΣ привет Ｈｅｌｌｏ 中文\"}",
       "ΟΔΟΣ ПРИВЕТ ＨＥＬＬＯ 中文|οδος привет ｈｅｌｌｏ 中文|Οδος Привет Ｈｅｌｌｏ 中文"},
      {"{{ ['b', 'A', 'É', 'a']|sort }} {{ ['É', 'é', 'E']|unique|list }}",
       "",
       "['A', 'a', 'b', 'É'] ['É', 'E']"},
  });
}

// ---- errors ----

TEST(JinjaErrors, SyntaxErrorsNameTheTemplateAndLine) {
  EXPECT_EQ(error_of<TemplateSyntaxError>("a\nb\n{% if %}"), "t:3: Expected an expression, got 'end of statement block'");
  EXPECT_EQ(error_of<TemplateSyntaxError>("{{ 1 +\n\n }}"), "t:3: unexpected 'end of print statement'");
  EXPECT_EQ(error_of<TemplateSyntaxError>("ok\n{% endfor %}"), "t:2: Encountered unknown tag 'endfor'.");
  EXPECT_EQ(error_of<TemplateSyntaxError>("{% for x in y %}"),
            "t:1: Unexpected end of template. Jinja was looking for the following tags: 'endfor' or 'else'. "
            "The innermost block that needs to be closed is 'for'.");
  EXPECT_EQ(error_of<TemplateSyntaxError>("x\n{{ 'unterminated }}"), "t:2: unexpected end of string");
  EXPECT_EQ(error_of<TemplateSyntaxError>("{% break %}"), "t:1: 'break' outside loop");
  EXPECT_EQ(error_of<TemplateSyntaxError>("{{ 1 }"), "t:1: unexpected '}'");
}

TEST(JinjaErrors, UnknownFiltersFailAtParseTimeUnlessConditional) {
  EXPECT_EQ(error_of<TemplateSyntaxError>("\n{{ x|nope }}"), "t:2: No filter named 'nope'.");
  EXPECT_EQ(error_of<TemplateSyntaxError>("{{ x is nope }}"), "t:1: No test named 'nope'.");
  // Inside an if (or a conditional expression) Jinja2 defers the error to evaluation.
  EXPECT_EQ(render("{% if false %}{{ x|nope }}{% endif %}ok"), "ok");
  EXPECT_EQ(render("{{ x|nope if false else 2 }}"), "2");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% if true %}{{ x|nope }}{% endif %}"), "t:1: No filter named 'nope' found.");
}

TEST(JinjaErrors, RaiseExceptionCarriesExactlyTheMessage) {
  EXPECT_EQ(error_of<TemplateRaisedError>("line1\n{{ raise_exception('bad ' ~ 'input') }}"), "bad input");
  // A TemplateRaisedError is also a dspark::Error.
  EXPECT_THROW(render("{{ raise_exception('x') }}"), dspark::Error);
}

TEST(JinjaErrors, RuntimeErrorsNameTheLine) {
  EXPECT_EQ(error_of<TemplateRuntimeError>("\n{{ 'a' + 1 }}"), "t:2: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ 1 + 'a' }}"), "t:1: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ 'a' < 1 }}"), "t:1: '<' not supported between instances of 'str' and 'int'");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ 1 // 0 }}"), "t:1: integer division or modulo by zero");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ 5() }}"), "t:1: 'int' object is not callable");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ missing|tojson }}"), "t:1: Object of type Undefined is not JSON serializable");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% for a, b in [1] %}{% endfor %}"), "t:1: cannot unpack non-iterable int object");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% set x = 1 %}{% set x.a = 2 %}"), "t:1: cannot assign attribute on non-namespace object");
}

TEST(JinjaErrors, UndefinedRaisesWhenUsedBeyondOneLevel) {
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ x.y }}"), "t:1: 'x' is undefined");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ d.a.b }}", R"({"d": {}})"), "t:1: 'dict object' has no attribute 'a'");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ l[3].x }}", R"({"l": [1]})"), "t:1: list object has no element 3");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ ([]|first).x }}"), "t:1: No first item, sequence was empty.");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ x < 1 }}"), "t:1: 'x' is undefined");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ 'a' + x }}"), "t:1: 'x' is undefined");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% for x in [1] %}{{ loop.previtem.role }}{% endfor %}"),
            "t:1: there is no previous item");
}

TEST(JinjaErrors, TheSandboxIsImmutable) {
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ [1].append(2) }}"), "t:1: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ {}.update({}) }}"), "t:1: access to attribute 'update' of 'dict' object is unsafe.");
  EXPECT_EQ(render("{{ 'x'.__class__ }}|{{ d._private }}", R"({"d": {"_private": 1}})"), "|1");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ range(200000)|length }}"),
            "t:1: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
}

// ---- resource limits ----

TEST(JinjaLimits, RecursionIsBounded) {
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}"),
            "t:1: maximum recursion depth exceeded: more than 256 nested macro calls");
  RenderLimits limits;
  limits.max_call_depth = 10;
  const std::string countdown = "{% macro c(n) %}{% if n > 0 %}{{ c(n - 1) }}{% endif %}{{ n }}{% endmacro %}";
  EXPECT_EQ(render(countdown + "{{ c(9) }}", "", limits), "0123456789");
  EXPECT_NE(error_of<TemplateRuntimeError>(countdown + "{{ c(10) }}", "", limits), "");
}

TEST(JinjaLimits, OutputAndWorkAreBounded) {
  RenderLimits limits;
  limits.max_output_bytes = 1000;
  EXPECT_EQ(error_of<TemplateRuntimeError>("{% for i in range(1000) %}{{ i }}{% endfor %}", "", limits),
            "t:1: output exceeds the limit of 1000 bytes");
  EXPECT_EQ(error_of<TemplateRuntimeError>("{{ 'ab' * 100000 }}", "", limits), "t:1: string repetition result is too large");
  limits.max_loop_iterations = 5000;
  EXPECT_EQ(error_of<TemplateRuntimeError>(
                "{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", "", limits),
            "t:1: more than 5000 loop iterations");
}

TEST(JinjaLimits, DeepNestingIsASyntaxErrorNotACrash) {
  std::string deep = "{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}";
  EXPECT_EQ(error_of<TemplateSyntaxError>(deep), "t:1: template nesting is too deep");
  std::string deep_ifs;
  for (int i = 0; i < 500; ++i) deep_ifs += "{% if true %}";
  EXPECT_EQ(error_of<TemplateSyntaxError>(deep_ifs), "t:1: template nesting is too deep");
  std::string long_chain = "{{ 0";
  for (int i = 0; i < 3000; ++i) long_chain += " ~ 0";
  EXPECT_EQ(error_of<TemplateSyntaxError>(long_chain + " }}"), "t:1: expression is too long (more than 4096 tokens in one tag)");
}

TEST(JinjaLimits, DeepEvaluationThroughMacrosIsBounded) {
  // Each call nests a 1900-deep expression tree: the render's total depth is what counts.
  std::string chain;
  for (int i = 0; i < 1900; ++i) chain += " ~ 0";
  const std::string source =
      "{% macro m(n) %}{% if n > 0 %}{{ m(n - 1)" + chain + " }}{% endif %}{% endmacro %}{{ m(5)|length }}";
  EXPECT_EQ(error_of<TemplateRuntimeError>(source), "t:1: template nesting exceeds 2000 levels during rendering");
  EXPECT_EQ(render(source.substr(0, source.find("m(5)")) + "m(0)|length }}"), "0");
}

// ---- globals and API ----

TEST(JinjaGlobals, StrftimeNowFormatsTheLocalTime) {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char year[16];
  std::strftime(year, sizeof(year), "%Y", &local);
  EXPECT_EQ(render("{{ strftime_now('%Y') }}"), year);
}

TEST(JinjaGlobals, ContextOverridesGlobals) {
  EXPECT_EQ(render("{{ range }}", R"({"range": "mine"})"), "mine");
  EXPECT_EQ(render("{% if strftime_now is defined %}yes{% endif %}"), "yes");
}

TEST(JinjaTemplate, RendersFromAValueAndConcurrently) {
  Template tmpl = Template::parse("{% for m in messages %}[{{ m.role }}:{{ m.content|trim }}]{% endfor %}", "chat");
  Dict message;
  message.set(Value("role"), Value("user"));
  message.set(Value("content"), Value(" hi "));
  Dict context;
  context.set(Value("messages"), Value::list({Value::dict(message)}));
  EXPECT_EQ(tmpl.render(Value::dict(context)), "[user:hi]");

  std::vector<std::thread> threads;
  std::vector<std::string> outputs(4);
  for (size_t t = 0; t < outputs.size(); ++t)
    threads.emplace_back([&, t] { outputs[t] = tmpl.render(Value::dict(context)); });
  for (auto& thread : threads) thread.join();
  for (const auto& out : outputs) EXPECT_EQ(out, "[user:hi]");
}

TEST(JinjaValue, PythonFloatRepr) {
  EXPECT_EQ(python_float_repr(1.0), "1.0");
  EXPECT_EQ(python_float_repr(0.1), "0.1");
  EXPECT_EQ(python_float_repr(1e20), "1e+20");
  EXPECT_EQ(python_float_repr(1e16), "1e+16");
  EXPECT_EQ(python_float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(python_float_repr(1e-5), "1e-05");
  EXPECT_EQ(python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(python_float_repr(-1.5e-7), "-1.5e-07");
  EXPECT_EQ(python_float_repr(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(python_float_repr(-0.0), "-0.0");
}

TEST(JinjaValue, PythonStringRepr) {
  EXPECT_EQ(python_string_repr("plain"), "'plain'");
  EXPECT_EQ(python_string_repr("it's"), "\"it's\"");
  EXPECT_EQ(python_string_repr("both ' \""), "'both \\' \"'");
  EXPECT_EQ(python_string_repr("tab\tnl\n\x01 \xc3\xa9"), "'tab\\tnl\\n\\x01 \xc3\xa9'");
}

}  // namespace
}  // namespace dspark::jinja
