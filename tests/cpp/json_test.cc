// The JSON DOM reader and the canonical writers (src/json/json.h).
#include "json/json.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace mlbridge {
namespace json {
namespace {

Value mustParse(std::string_view text) {
  StatusOr<Value> v = parse(text);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status().toString();
  return v.ok() ? *v : Value();
}

void expectError(std::string_view text) {
  StatusOr<Value> v = parse(text);
  EXPECT_FALSE(v.ok()) << "accepted: " << text;
  if (!v.ok()) {
    EXPECT_EQ(v.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(v.status().message().find("at byte"), std::string::npos) << v.status().message();
  }
}

template <class T>
T fromBits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

std::string f32(float v) {
  std::string s;
  appendFloat32(s, v);
  return s;
}
std::string f64(double v) {
  std::string s;
  appendFloat64(s, v);
  return s;
}

// ---- reader ---------------------------------------------------------------

TEST(JsonParse, Document) {
  Value v = mustParse(" {\"a\" : [1, -2.5e3, true, false, null, \"x\"], \"b\":{}, \"c\":[] }\n");
  ASSERT_TRUE(v.isObject());
  ASSERT_EQ(v.members().size(), 3u);
  const Value* a = v.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->isArray());
  ASSERT_EQ(a->items().size(), 6u);
  EXPECT_TRUE(a->items()[0].isNumber());
  EXPECT_EQ(a->items()[0].text(), "1");
  EXPECT_EQ(a->items()[1].text(), "-2.5e3");  // numbers keep their text
  EXPECT_TRUE(a->items()[2].isBool() && a->items()[2].boolean());
  EXPECT_TRUE(a->items()[3].isBool() && !a->items()[3].boolean());
  EXPECT_TRUE(a->items()[4].isNull());
  EXPECT_TRUE(a->items()[5].isString());
  EXPECT_EQ(a->items()[5].text(), "x");
  EXPECT_TRUE(v.find("b")->isObject());
  EXPECT_TRUE(v.find("c")->isArray());
  EXPECT_EQ(v.find("zz"), nullptr);
  EXPECT_EQ(a->find("a"), nullptr);  // not an object
}

TEST(JsonParse, Scalars) {
  EXPECT_TRUE(mustParse("0").isNumber());
  EXPECT_TRUE(mustParse("\"\"").isString());
  EXPECT_TRUE(mustParse("null").isNull());
  EXPECT_TRUE(mustParse(" true ").boolean());
  // Duplicate keys are kept; find() returns the first.
  Value v = mustParse("{\"k\":1,\"k\":2}");
  EXPECT_EQ(v.members().size(), 2u);
  EXPECT_EQ(v.find("k")->text(), "1");
}

TEST(JsonParse, StringEscapes) {
  EXPECT_EQ(mustParse(R"("a\"b\\c\/d\b\f\n\r\t")").text(), "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(mustParse(R"("\u00e9\u00E9")").text(), "\xc3\xa9\xc3\xa9");
  EXPECT_EQ(mustParse(R"("\u65e5")").text(), "\xe6\x97\xa5");
  EXPECT_EQ(mustParse(R"("\ud83d\ude00")").text(), "\xf0\x9f\x98\x80");  // surrogate pair
  EXPECT_EQ(mustParse(R"("\u0000")").text(), std::string(1, '\0'));
  EXPECT_EQ(mustParse("\"\xf0\x9f\x98\x80 \xc3\xa9\"").text(), "\xf0\x9f\x98\x80 \xc3\xa9");  // raw UTF-8
  expectError(R"("\ud83d")");         // lone high surrogate
  expectError(R"("\ud83dx")");
  expectError(R"("\ud83d\u0041")");   // high + non-low
  expectError(R"("\ude00")");         // lone low surrogate
  expectError(R"("\x41")");           // invalid escape
  expectError(R"("\u12")");           // short \u
  expectError(R"("\u12G4")");
  expectError("\"a\nb\"");            // raw control character
  expectError("\"\x01\"");
  expectError("\"\xff\"");            // invalid UTF-8
  expectError("\"\xc0\xaf\"");        // overlong
  expectError("\"\xed\xa0\x80\"");    // encoded surrogate
  expectError("\"\xf4\x90\x80\x80\""); // > U+10FFFF
  expectError("\"\xe6\x97\"");        // truncated sequence
}

TEST(JsonParse, Integers) {
  int64_t i = 0;
  uint64_t u = 0;
  EXPECT_TRUE(mustParse("9223372036854775807").toInt64(&i));
  EXPECT_EQ(i, std::numeric_limits<int64_t>::max());
  EXPECT_TRUE(mustParse("-9223372036854775808").toInt64(&i));
  EXPECT_EQ(i, std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(mustParse("9223372036854775808").toInt64(&i));
  EXPECT_FALSE(mustParse("-9223372036854775809").toInt64(&i));
  EXPECT_TRUE(mustParse("18446744073709551615").toUInt64(&u));
  EXPECT_EQ(u, std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(mustParse("18446744073709551616").toUInt64(&u));
  EXPECT_FALSE(mustParse("-1").toUInt64(&u));
  EXPECT_TRUE(mustParse("-0").toUInt64(&u));
  EXPECT_EQ(u, 0u);
  // Integral values in other number forms convert exactly.
  EXPECT_TRUE(mustParse("1.0").toInt64(&i));
  EXPECT_EQ(i, 1);
  EXPECT_TRUE(mustParse("1e2").toInt64(&i));
  EXPECT_EQ(i, 100);
  EXPECT_TRUE(mustParse("1.5E1").toInt64(&i));
  EXPECT_EQ(i, 15);
  EXPECT_TRUE(mustParse("1200e-2").toInt64(&i));
  EXPECT_EQ(i, 12);
  EXPECT_TRUE(mustParse("-9.223372036854775808e18").toInt64(&i));
  EXPECT_EQ(i, std::numeric_limits<int64_t>::min());
  EXPECT_TRUE(mustParse("1.8446744073709551615e19").toUInt64(&u));
  EXPECT_EQ(u, std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(mustParse("0.000e999999999999").toInt64(&i));
  EXPECT_EQ(i, 0);
  EXPECT_FALSE(mustParse("1.5").toInt64(&i));
  EXPECT_FALSE(mustParse("1e-1").toInt64(&i));
  EXPECT_FALSE(mustParse("1e20").toInt64(&i));
  EXPECT_FALSE(mustParse("1e999999999999").toUInt64(&u));
  EXPECT_FALSE(mustParse("NaN").toInt64(&i));
  EXPECT_FALSE(mustParse("\"1\"").toInt64(&i));
  EXPECT_FALSE(mustParse("true").toUInt64(&u));
}

TEST(JsonParse, Doubles) {
  double d = 0;
  EXPECT_TRUE(mustParse("0.1").toDouble(&d));
  EXPECT_EQ(d, 0.1);
  EXPECT_TRUE(mustParse("-2.5e-3").toDouble(&d));
  EXPECT_EQ(d, -2.5e-3);
  EXPECT_TRUE(mustParse("18446744073709551617").toDouble(&d));
  EXPECT_EQ(d, 18446744073709551616.0);
  EXPECT_TRUE(mustParse("1.7976931348623157e308").toDouble(&d));
  EXPECT_EQ(d, std::numeric_limits<double>::max());
  EXPECT_TRUE(mustParse("5e-324").toDouble(&d));
  EXPECT_EQ(d, std::numeric_limits<double>::denorm_min());
  EXPECT_TRUE(mustParse("-1e-400").toDouble(&d));  // underflow rounds to zero
  EXPECT_EQ(d, 0.0);
  EXPECT_TRUE(std::signbit(d));
  EXPECT_FALSE(mustParse("1e400").toDouble(&d));  // overflow is an error
  EXPECT_TRUE(mustParse("NaN").toDouble(&d));
  EXPECT_TRUE(std::isnan(d));
  EXPECT_TRUE(mustParse("Infinity").toDouble(&d));
  EXPECT_EQ(d, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(mustParse("-Infinity").toDouble(&d));
  EXPECT_EQ(d, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(mustParse("\"NaN\"").toDouble(&d));
  EXPECT_TRUE(std::isnan(d));
  EXPECT_TRUE(mustParse("\"-Infinity\"").toDouble(&d));
  EXPECT_EQ(d, -std::numeric_limits<double>::infinity());
  EXPECT_FALSE(mustParse("\"nan\"").toDouble(&d));
  EXPECT_FALSE(mustParse("\"1.5\"").toDouble(&d));
  EXPECT_FALSE(mustParse("null").toDouble(&d));
}

TEST(JsonParse, BareNonFiniteTokens) {
  Value v = mustParse("[NaN,Infinity,-Infinity]");
  ASSERT_EQ(v.items().size(), 3u);
  for (const Value& x : v.items()) EXPECT_TRUE(x.isNumber());
  expectError("nan");
  expectError("Inf");
  expectError("-NaN");
  expectError("+Infinity");
  expectError("Infinityx");
}

TEST(JsonParse, RejectsMalformedNumbers) {
  for (const char* bad : {"01", "-", "+1", "1.", ".5", "1e", "1e+", "0x10", "1.5.2", "--1", "- 1", "1_000", "١"})
    expectError(bad);
}

TEST(JsonParse, RejectsGarbage) {
  for (const char* bad : {"", " ", "{", "}", "[", "]", "[1,]", "[,1]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{a:1}",
                          "{'a':1}", "[1 2]", "{\"a\":1 \"b\":2}", "tru", "nul", "falsey", "\"abc", "1 2", "{} {}",
                          "[\"a\":1]", "{\"a\",1}", "\x00", "/* c */ 1", "[1]x"})
    expectError(bad);
  expectError(std::string_view("\0", 1));
  expectError(std::string_view("[1]\0", 4));
}

TEST(JsonParse, ErrorsNameTheByteOffset) {
  StatusOr<Value> v = parse("[1, 2, x]");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("byte 7"), std::string::npos) << v.status().message();
}

TEST(JsonParse, DepthLimit) {
  std::string ok = std::string(256, '[') + std::string(256, ']');
  EXPECT_TRUE(parse(ok).ok());
  std::string deep = std::string(257, '[') + std::string(257, ']');
  expectError(deep);
  // Far deeper than any stack could take: refused, not a crash.
  expectError(std::string(1000000, '['));
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  expectError(objects);
}

TEST(JsonParse, EveryTruncationIsAnError) {
  const std::string doc =
      R"({"header":{"version":1,"features":[{"name":"a\u00e9","type":"int64_t","port":0,"shape":[1,2]}],)"
      R"("x":[true,false,null,-1.5e-3,"\ud83d\ude00"]}})";
  ASSERT_TRUE(parse(doc).ok());
  for (size_t n = 0; n < doc.size(); ++n) {
    StatusOr<Value> v = parse(std::string_view(doc.data(), n));
    EXPECT_FALSE(v.ok()) << "prefix of " << n << " bytes accepted";
  }
}

TEST(JsonParse, RandomGarbageNeverCrashes) {
  std::mt19937_64 rng(12345);
  const std::string alphabet = "{}[]:,\"\\/ 0123456789-+.eEtruefalsnNIiy\n\t\x01\xc3\xa9\xff";
  const std::string seed =
      R"({"observation":{"id":0,"tensors":[{"name":"x","type":"float","shape":[2],"data":[1.5,-0.25,"NaN"]}]}})";
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s;
    if (iter % 2) {
      size_t n = rng() % 64;
      for (size_t i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
    } else {
      s = seed;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        size_t pos = rng() % s.size();
        switch (rng() % 3) {
          case 0: s[pos] = alphabet[rng() % alphabet.size()]; break;
          case 1: s.erase(pos, 1 + rng() % 3); break;
          default: s.insert(pos, 1, static_cast<char>(rng())); break;
        }
        if (s.empty()) s = "x";
      }
    }
    StatusOr<Value> v = parse(s);
    if (v.ok()) ++accepted;
    else EXPECT_EQ(v.status().code(), StatusCode::kDataLoss);
  }
  EXPECT_GT(accepted, 0);  // some mutations stay valid JSON
}

// ---- writers --------------------------------------------------------------

TEST(JsonWrite, StringsAsPythonJsonDumps) {
  // Expected values are Python's json.dumps(s, ensure_ascii=False).
  const std::pair<std::string, std::string> cases[] = {
      {"", R"("")"},
      {"plain", R"("plain")"},
      {"quote\"", R"("quote\"")"},
      {"back\\slash", R"("back\\slash")"},
      {"/slash", R"("/slash")"},
      {"nl\ncr\rtab\tbs\bff\f", R"("nl\ncr\rtab\tbs\bff\f")"},
      {std::string(1, '\0'), R"("\u0000")"},
      {"\x01\x1f", R"("\u0001\u001f")"},
      {"\x1b[0m", R"("\u001b[0m")"},
      {"\x7f", "\"\x7f\""},
      {"\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80", "\"\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80\""},
      {"mix\"\\\n\x05z", R"("mix\"\\\n\u0005z")"},
  };
  for (const auto& c : cases) {
    std::string out = "prefix:";
    appendString(out, c.first);
    EXPECT_EQ(out, "prefix:" + c.second);
    // And it reads back.
    StatusOr<Value> v = parse(c.second);
    ASSERT_TRUE(v.ok()) << c.second;
    EXPECT_EQ(v->text(), c.first);
  }
}

TEST(JsonWrite, Integers) {
  std::string s;
  appendInt(s, std::numeric_limits<int64_t>::min());
  s += ',';
  appendInt(s, 0);
  s += ',';
  appendUInt(s, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(s, "-9223372036854775808,0,18446744073709551615");
}

TEST(JsonWrite, Float32KnownCases) {
  // Expected values from the Python side (mlbridge.formats.jsonfmt.format_float32:
  // numpy's float32-shortest digits laid out like repr()).
  const std::pair<uint32_t, const char*> cases[] = {
      {0x00000000u, "0.0"},          {0x80000000u, "-0.0"},
      {0x3f800000u, "1.0"},          {0xbf800000u, "-1.0"},
      {0x42c80000u, "100.0"},        {0x38d1b717u, "0.0001"},
      {0x3727c5acu, "1e-05"},        {0x3dcccccdu, "0.1"},
      {0x3e4ccccdu, "0.2"},          {0x3e99999au, "0.3"},
      {0x3eaaaaabu, "0.33333334"},   {0x4ceb79a3u, "123456790.0"},
      {0x4b800000u, "16777216.0"},   {0x58635fa9u, "1000000000000000.0"},
      {0x5a0e1bcau, "1e+16"},        {0x5a5529afu, "1.5e+16"},
      {0x5a0e1bc9u, "9999999000000000.0"},
      {0x7f7fffffu, "3.4028235e+38"}, {0xff7fffffu, "-3.4028235e+38"},
      {0x00800000u, "1.1754944e-38"}, {0x00000001u, "1e-45"},
      {0x40200000u, "2.5"},          {0x42f70000u, "123.5"},
      {0x38d1b68eu, "9.9999e-05"},   {0x3901725bu, "0.00012345"},
      {0x477fe000u, "65504.0"},      {0x501502f9u, "10000000000.0"},
      {0x4f800000u, "4294967300.0"}, {0x4b3c614fu, "12345679.0"},
      {0x7e967699u, "1e+38"},        {0x004c3927u, "7e-39"},
      {0x52e6b438u, "495433020000.0"}, {0xf2a74de4u, "-6.6276046e+30"},
      {0x269e0d37u, "1.0967034e-15"}, {0x6513270eu, "4.343177e+22"},
      {0xa6a3a450u, "-1.1354934e-15"}, {0x0c5c7fd0u, "1.6986646e-31"},
      {0xd23f0824u, "-205118830000.0"}, {0x892f902bu, "-2.1132646e-33"},
      {0x5d9dc9f8u, "1.4212364e+18"}, {0x9531985du, "-3.586506e-26"},
  };
  for (const auto& c : cases) EXPECT_EQ(f32(fromBits<float>(c.first)), c.second) << std::hex << c.first;
}

TEST(JsonWrite, Float64KnownCases) {
  // Expected values are Python's repr(float).
  const std::pair<uint64_t, const char*> cases[] = {
      {0x0000000000000000ull, "0.0"},
      {0x8000000000000000ull, "-0.0"},
      {0x3ff0000000000000ull, "1.0"},
      {0xbff8000000000000ull, "-1.5"},
      {0x4059000000000000ull, "100.0"},
      {0x3f1a36e2eb1c432dull, "0.0001"},
      {0x3ee4f8b588e368f1ull, "1e-05"},
      {0x3fb999999999999aull, "0.1"},
      {0x3fd5555555555555ull, "0.3333333333333333"},
      {0x4340000000000000ull, "9007199254740992.0"},
      {0x4340000000000001ull, "9007199254740994.0"},
      {0x430c6bf526340000ull, "1000000000000000.0"},
      {0x4341c37937e08000ull, "1e+16"},
      {0x434aa535d3d0c000ull, "1.5e+16"},
      {0x4341c37937e07fffull, "9999999999999998.0"},
      {0x7fefffffffffffffull, "1.7976931348623157e+308"},
      {0x0000000000000001ull, "5e-324"},
      {0x0010000000000000ull, "2.2250738585072014e-308"},
      {0x4480f0cf064dd592ull, "1e+22"},
      {0x44b52d02c7e14af6ull, "1e+23"},
      {0x437b69b4ba630f35ull, "1.2345678901234568e+17"},
      {0x3f202e85be111841ull, "0.000123456789"},
      {0x3e7ad7f29abcaf48ull, "1e-07"},
      {0x3fb99999a0000000ull, "0.10000000149011612"},
      {0x54b249ad2594c37dull, "1e+100"},
      {0x3ff0000000000001ull, "1.0000000000000002"},
      {0xe8e25d940ed90475ull, "-1.7160537630466207e+197"},
      {0x36f675cc81e74ef5ull, "6.294675241195386e-44"},
      {0x1600a35a099950d8ull, "1.0613447212142254e-202"},
      {0x6b0d549b6f03675aull, "4.708325160387546e+207"},
      {0x3d9c172411e20b8full, "6.387016158513563e-12"},
      {0x8d116ece1738f7d9ull, "-9.973130378568733e-246"},
      {0xf28c105d1fb17c23ull, "-5.988180159386011e+243"},
  };
  for (const auto& c : cases) EXPECT_EQ(f64(fromBits<double>(c.first)), c.second) << std::hex << c.first;
}

TEST(JsonWrite, NonFinite) {
  EXPECT_EQ(f32(std::numeric_limits<float>::quiet_NaN()), "\"NaN\"");
  EXPECT_EQ(f32(-std::numeric_limits<float>::quiet_NaN()), "\"NaN\"");
  EXPECT_EQ(f32(std::numeric_limits<float>::infinity()), "\"Infinity\"");
  EXPECT_EQ(f32(-std::numeric_limits<float>::infinity()), "\"-Infinity\"");
  EXPECT_EQ(f64(std::numeric_limits<double>::quiet_NaN()), "\"NaN\"");
  EXPECT_EQ(f64(std::numeric_limits<double>::infinity()), "\"Infinity\"");
  EXPECT_EQ(f64(-std::numeric_limits<double>::infinity()), "\"-Infinity\"");
}

// Python's repr layout, checked structurally on any output.
void checkLayout(const std::string& s, const std::string& context) {
  SCOPED_TRACE(context + " -> " + s);
  size_t i = s[0] == '-' ? 1 : 0;
  size_t e = s.find('e');
  ASSERT_FALSE(s.empty());
  if (e == std::string::npos) {
    // Positional: digits '.' digits, with a digit on both sides.
    size_t dot = s.find('.');
    ASSERT_NE(dot, std::string::npos);
    ASSERT_GT(dot, i);
    ASSERT_LT(dot + 1, s.size());
    if (s[i] == '0') {
      EXPECT_EQ(dot, i + 1);  // no leading zeros
      // |v| >= 1e-4: at most 3 zeros after the point before a nonzero digit
      size_t nz = s.find_first_not_of('0', dot + 1);
      if (nz != std::string::npos) {
        EXPECT_LE(nz - dot - 1, 3u);
      }
    } else {
      EXPECT_LE(dot - i, 16u);  // < 1e16
    }
  } else {
    // Scientific: d[.ddd]e(+|-)dd, no trailing zero in the mantissa.
    ASSERT_TRUE(s[i] >= '1' && s[i] <= '9');
    if (s[i + 1] == '.') {
      EXPECT_NE(s[e - 1], '0');
    } else {
      EXPECT_EQ(e, i + 1);
    }
    ASSERT_LT(e + 3, s.size() + 1);
    EXPECT_TRUE(s[e + 1] == '+' || s[e + 1] == '-');
    EXPECT_GE(s.size() - e - 2, 2u);
    int exp = std::stoi(s.substr(e + 2));
    if (s[e + 1] == '+') {
      EXPECT_GE(exp, 16);
    } else {
      EXPECT_GE(exp, 5);
    }
  }
}

TEST(JsonWrite, Float32RoundTripsAndLayout) {
  std::mt19937 rng(2024);
  for (int iter = 0; iter < 200000; ++iter) {
    uint32_t bits = iter < 1000 ? static_cast<uint32_t>(iter) * 4294967u : static_cast<uint32_t>(rng());
    float v = fromBits<float>(bits);
    if (!std::isfinite(v)) continue;
    std::string s = f32(v);
    StatusOr<Value> parsed = parse(s);
    ASSERT_TRUE(parsed.ok()) << s;
    ASSERT_TRUE(parsed->isNumber()) << s;
    // Read back as float32 directly from the text: same bits.
    float back = 0;
    std::from_chars_result r = std::from_chars(s.data(), s.data() + s.size(), back);
    ASSERT_TRUE(r.ec == std::errc() && r.ptr == s.data() + s.size()) << s;
    ASSERT_EQ(std::memcmp(&back, &v, 4), 0) << s << " bits " << std::hex << bits;
    if (iter % 16 == 0) checkLayout(s, std::to_string(bits));
  }
}

TEST(JsonWrite, Float64RoundTripsAndLayout) {
  std::mt19937_64 rng(77);
  for (int iter = 0; iter < 200000; ++iter) {
    uint64_t bits = rng();
    if (iter % 3 == 0) bits = (bits & 0x800FFFFFFFFFFFFFull) | (uint64_t(990 + rng() % 80) << 52);  // near 1
    double v = fromBits<double>(bits);
    if (!std::isfinite(v)) continue;
    std::string s = f64(v);
    StatusOr<Value> parsed = parse(s);
    ASSERT_TRUE(parsed.ok()) << s;
    double back = 0;
    ASSERT_TRUE(parsed->toDouble(&back)) << s;
    ASSERT_EQ(std::memcmp(&back, &v, 8), 0) << s;
    if (iter % 16 == 0) checkLayout(s, std::to_string(bits));
  }
}

TEST(JsonWrite, ThresholdsOfThePositionalLayout) {
  EXPECT_EQ(f64(1e15), "1000000000000000.0");
  EXPECT_EQ(f64(9999999999999998.0), "9999999999999998.0");
  EXPECT_EQ(f64(1e16), "1e+16");
  EXPECT_EQ(f64(0.0001), "0.0001");
  EXPECT_EQ(f64(0.00009999), "9.999e-05");
  EXPECT_EQ(f64(1e-100), "1e-100");
  EXPECT_EQ(f64(-1.5e300), "-1.5e+300");
  EXPECT_EQ(f32(1e-5f), "1e-05");
  EXPECT_EQ(f32(1e16f), "1e+16");
  EXPECT_EQ(f32(123.25f), "123.25");
}

// writeFloat32's shortcut for exact short decimals (m * 10^-k, up to 6
// significant digits) gives the same text as the general shortest-digits
// path: every such decimal, both signs, around the shortcut's bounds, and
// random floats (which mostly miss the shortcut).
TEST(JsonWrite, Float32ShortDecimalShortcutMatchesTheGeneralPath) {
  char fast[kMaxFloatText], slow[kMaxFloatText];
  size_t checked = 0;
  auto same = [&](float v) {
    std::string a(fast, writeFloat32(fast, v)), b(slow, writeFloat32General(slow, v));
    ASSERT_EQ(a, b) << "value " << v;
    ++checked;
  };
  const double pow10[7] = {1, 10, 100, 1000, 10000, 100000, 1000000};
  for (int k = 0; k <= 6; ++k)
    for (int m = 0; m < 1000000; m += (m < 20000 ? 1 : 7)) {
      float v = static_cast<float>(m / pow10[k]);
      same(v);
      same(-v);
    }
  for (float v : {1e-6f, 9.99999e-7f, 1.0000001e-6f, 16777215.0f, 16777216.0f, 16777218.0f, 1e6f, 999999.0f,
                  1234567.0f, 0.1f, 0.3f, 1e-5f, 1e-4f, 0.015625f, 0.0078125f, 3.0517578e-05f, 1e15f, 1e16f})
    same(v);
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 2000000; ++i) {
    uint32_t b = bits(rng);
    float v;
    std::memcpy(&v, &b, 4);
    same(v);
  }
  EXPECT_GT(checked, 4000000u);
}

TEST(JsonWrite, AppendsWithoutTouchingPrefix) {
  std::string s = "[";
  appendFloat32(s, 1.5f);
  s += ',';
  appendFloat64(s, -0.25);
  s += ',';
  appendString(s, "a");
  s += ']';
  EXPECT_EQ(s, "[1.5,-0.25,\"a\"]");
}

}  // namespace
}  // namespace json
}  // namespace mlbridge
