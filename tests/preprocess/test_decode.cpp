// decode_image: every source kind becomes the RGB (or L) pixels PIL's
// convert() gives, and every bad input is an InputError naming the file.
// Fixtures are built in memory by image_writers.h with known pixel values.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "engine/preprocess/decode_image.h"
#include "image_writers.h"
#include "weights/error.h"

using namespace pola::preprocess;
using pola::test::Bytes;

namespace {

ImageU8 decode_bytes(const Bytes &b, int channels = 3) {
  return decode_image_from_memory(b.data(), b.size(), "fixture", channels);
}

Bytes rgb_of(const ImageU8 &img) { return Bytes(img.pixels.begin(), img.pixels.end()); }

// Expands per-pixel grey values into what convert('RGB') gives.
Bytes replicate(const std::vector<uint8_t> &grey) {
  Bytes out;
  for (uint8_t g : grey) out.insert(out.end(), {g, g, g});
  return out;
}

std::string error_of_file(const std::string &path) {
  try {
    decode_image(path);
  } catch (const pola::InputError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("decode: 8-bit RGB, RGBA, grey and grey+alpha PNG") {
  // 3x2 image; RGBA alpha includes 0 to show alpha is dropped, not composited.
  const std::vector<uint16_t> rgb{10, 20, 30, 40, 50, 60, 70, 80, 90, 255, 0, 1, 2, 3, 4, 128, 129, 130};
  ImageU8 img = decode_bytes(pola::test::encode_png(3, 2, 8, 2, rgb));
  CHECK(img.width == 3);
  CHECK(img.height == 2);
  CHECK(img.channels == 3);
  CHECK(rgb_of(img) == Bytes(rgb.begin(), rgb.end()));

  std::vector<uint16_t> rgba;
  for (size_t i = 0; i < rgb.size(); i += 3) rgba.insert(rgba.end(), {rgb[i], rgb[i + 1], rgb[i + 2], uint16_t(i * 20)});
  CHECK(rgb_of(decode_bytes(pola::test::encode_png(3, 2, 8, 6, rgba))) == Bytes(rgb.begin(), rgb.end()));

  const std::vector<uint16_t> grey{0, 17, 99, 200, 254, 255};
  CHECK(rgb_of(decode_bytes(pola::test::encode_png(3, 2, 8, 0, grey))) == replicate({0, 17, 99, 200, 254, 255}));

  const std::vector<uint16_t> grey_alpha{0, 0, 17, 255, 99, 3, 200, 0, 254, 9, 255, 128};
  CHECK(rgb_of(decode_bytes(pola::test::encode_png(3, 2, 8, 4, grey_alpha))) == replicate({0, 17, 99, 200, 254, 255}));
}

TEST_CASE("decode: sub-byte grey PNG scales to 0..255 like PIL's L;1/L;2/L;4 modes") {
  CHECK(rgb_of(decode_bytes(pola::test::encode_png(4, 1, 1, 0, {0, 1, 1, 0}))) == replicate({0, 255, 255, 0}));
  CHECK(rgb_of(decode_bytes(pola::test::encode_png(4, 1, 2, 0, {0, 1, 2, 3}))) == replicate({0, 85, 170, 255}));
  CHECK(rgb_of(decode_bytes(pola::test::encode_png(3, 1, 4, 0, {0, 7, 15}))) == replicate({0, 119, 255}));
}

TEST_CASE("decode: palette PNG looks colours up; a transparent entry keeps its colour") {
  const Bytes palette{255, 0, 0, 0, 255, 0, 0, 0, 255, 12, 34, 56};
  const Bytes trns{255, 0}; // entry 1 fully transparent
  const ImageU8 img = decode_bytes(pola::test::encode_png(4, 1, 8, 3, {3, 1, 0, 2}, palette, trns));
  CHECK(rgb_of(img) == Bytes{12, 34, 56, 0, 255, 0, 255, 0, 0, 0, 0, 255});
  // 2-bit palette indices.
  CHECK(rgb_of(decode_bytes(pola::test::encode_png(2, 1, 2, 3, {2, 3}, palette))) == Bytes{0, 0, 255, 12, 34, 56});
}

TEST_CASE("decode: 16-bit PNG keeps the high byte, except grey which PIL clips (mode I)") {
  const std::vector<uint16_t> rgb16{0x0000, 0x00ff, 0x0100, 0x7fff, 0x8000, 0xffff};
  CHECK(rgb_of(decode_bytes(pola::test::encode_png(2, 1, 16, 2, rgb16))) == Bytes{0x00, 0x00, 0x01, 0x7f, 0x80, 0xff});
  const std::vector<uint16_t> rgba16{0x1234, 0x5678, 0x9abc, 0x0000, 0xfedc, 0xba98, 0x7654, 0xffff};
  CHECK(rgb_of(decode_bytes(pola::test::encode_png(2, 1, 16, 6, rgba16))) == Bytes{0x12, 0x56, 0x9a, 0xfe, 0xba, 0x76});
  const std::vector<uint16_t> la16{0x1234, 0x0000, 0xfedc, 0xffff};
  CHECK(rgb_of(decode_bytes(pola::test::encode_png(2, 1, 16, 4, la16))) == replicate({0x12, 0xfe}));

  // Pillow 9.4: Image.open gives mode "I"; convert('RGB') clips to 0..255.
  const std::vector<uint16_t> grey16{0, 100, 255, 256, 3000, 65535};
  CHECK(rgb_of(decode_bytes(pola::test::encode_png(6, 1, 16, 0, grey16))) == replicate({0, 100, 255, 255, 255, 255}));
}

TEST_CASE("decode: binary PNM follows PIL's maxval rescaling, not stb's raw samples") {
  // Expected values from Pillow 9.4 (Image.open(...).convert('RGB')).
  const std::vector<uint16_t> v{0, 100, 300, 1000, 65535, 40000, 256, 255};
  // Grey, maxval 65535: mode I, clipped.
  CHECK(rgb_of(decode_bytes(pola::test::encode_pnm(8, 1, 1, 65535, v))) ==
        replicate({0, 100, 255, 255, 255, 255, 255, 255}));
  // Grey, maxval 1000: rescaled to 0..65535 first (100 -> 6554), then clipped.
  CHECK(rgb_of(decode_bytes(pola::test::encode_pnm(4, 1, 1, 1000, {0, 1, 3, 1000}))) == replicate({0, 66, 197, 255}));
  // Colour, maxval 65535: round(v / 65535 * 255).
  std::vector<uint16_t> rgb16;
  for (uint16_t s : v) rgb16.insert(rgb16.end(), {s, s, s});
  CHECK(rgb_of(decode_bytes(pola::test::encode_pnm(8, 1, 3, 65535, rgb16))) == replicate({0, 0, 1, 4, 255, 156, 1, 1}));
  // 8-bit grey, maxval 15: 0..15 -> 0..255.
  CHECK(rgb_of(decode_bytes(pola::test::encode_pnm(3, 1, 1, 15, {0, 7, 15}))) == replicate({0, 119, 255}));
  // Truncated samples.
  CHECK_THROWS_AS(decode_bytes(pola::test::encode_pnm(3, 1, 1, 255, {0, 7})), pola::InputError);
}

TEST_CASE("decode: BMP and PPM") {
  const Bytes rgb{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};
  CHECK(rgb_of(decode_bytes(pola::test::encode_bmp_rgb(3, 2, rgb))) == rgb); // bottom-up rows, padded stride
  CHECK(rgb_of(decode_bytes(pola::test::encode_pnm(3, 2, 3, 255, std::vector<uint16_t>(rgb.begin(), rgb.end())))) ==
        rgb);
  CHECK(rgb_of(decode_bytes(pola::test::encode_pnm(2, 1, 1, 255, {7, 250}))) == replicate({7, 250}));
}

TEST_CASE("decode: grey output is PIL's convert('L')") {
  const std::vector<uint16_t> rgb{255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 1, 2, 3, 200, 100, 50};
  const ImageU8 l = decode_bytes(pola::test::encode_png(6, 1, 8, 2, rgb), 1);
  CHECK(l.channels == 1);
  // Values from Pillow 9.4: Image.fromarray(...).convert('L').
  CHECK(Bytes(l.pixels.begin(), l.pixels.end()) == Bytes{76, 150, 29, 255, 2, 124});
  // Grey sources come back unchanged.
  const ImageU8 g = decode_bytes(pola::test::encode_png(3, 1, 8, 0, {0, 77, 255}), 1);
  CHECK(Bytes(g.pixels.begin(), g.pixels.end()) == Bytes{0, 77, 255});
}

TEST_CASE("decode: from a file, same as from memory") {
  const std::string path = pola::test::temp_path("small.png");
  const Bytes png = pola::test::encode_png(2, 2, 8, 0, {1, 2, 3, 4});
  pola::test::write_file(path, png);
  CHECK(rgb_of(decode_image(path)) == replicate({1, 2, 3, 4}));
  std::remove(path.c_str());
}

TEST_CASE("decode: bad inputs are InputErrors naming the file and the problem") {
  const std::string missing = pola::test::temp_path("missing.png");
  std::string msg = error_of_file(missing);
  CHECK(msg.find(missing) != std::string::npos);
  CHECK(msg.find("cannot open") != std::string::npos);

  const std::string text = pola::test::temp_path("not_an_image.jpg");
  pola::test::write_file(text, Bytes{'h', 'e', 'l', 'l', 'o', '\n'});
  msg = error_of_file(text);
  CHECK(msg.find(text) != std::string::npos);
  CHECK_MESSAGE(msg.find("not an image file (unknown format)") != std::string::npos, msg);

  const std::string empty = pola::test::temp_path("empty.png");
  pola::test::write_file(empty, {});
  CHECK(error_of_file(empty).find("empty") != std::string::npos);

  // Valid header, pixel data cut off: said in plain words, not in the decoder's codes.
  const std::string truncated = pola::test::temp_path("truncated.png");
  Bytes png = pola::test::encode_png(8, 8, 8, 2, std::vector<uint16_t>(8 * 8 * 3, 7));
  png.resize(png.size() - 40);
  pola::test::write_file(truncated, png);
  msg = error_of_file(truncated);
  CHECK(msg.find(truncated) != std::string::npos);
  CHECK_MESSAGE(msg.find("truncated PNG data") != std::string::npos, msg);

  CHECK(error_of_file("/").find("/") == 0);

  for (const char *p : {text.c_str(), empty.c_str(), truncated.c_str()}) std::remove(p);
}

TEST_CASE("decode: broken files are described in plain words, never in the decoder's terms") {
  // Each broken file, the words its message must hold. The decoder's own name
  // and its bare codes ("outofdata", "not enough pixels") must not show.
  const Bytes png = pola::test::encode_png(8, 8, 8, 2, std::vector<uint16_t>(8 * 8 * 3, 7));
  const Bytes bmp = pola::test::encode_bmp_rgb(4, 4, Bytes(4 * 4 * 3, 9));
  const Bytes pgm = pola::test::encode_pnm(4, 4, 1, 255, std::vector<uint16_t>(16, 3));
  struct Case {
    const char *name;
    Bytes bytes;
    const char *words;
  };
  const Case cases[] = {
      {"text.png", Bytes{'h', 'e', 'l', 'l', 'o'}, "not an image file (unknown format)"},
      {"cut_png.png", Bytes(png.begin(), png.end() - 40), "truncated PNG data"},
      {"png_no_pixels.png", pola::test::png_header_only(16, 16), "truncated PNG data"},
      {"cut_bmp.bmp", Bytes(bmp.begin(), bmp.begin() + 40), "BMP"},
      {"cut_pgm.pgm", Bytes(pgm.begin(), pgm.end() - 5), "truncated PNM data"},
      {"cut_gif.gif", Bytes{'G', 'I', 'F', '8', '9', 'a', 2, 0, 2, 0, 0, 0, 0}, "truncated GIF data"},
  };
  for (const auto &c : cases) {
    const std::string path = pola::test::temp_path(c.name);
    pola::test::write_file(path, c.bytes);
    const std::string msg = error_of_file(path);
    CAPTURE(msg);
    CHECK(msg.find(path) == 0);
    CHECK(msg.find(c.words) != std::string::npos);
    for (const char *jargon : {"stb", "outofdata", "not enough pixels", "read past buffer", "unknown image type"})
      CHECK(msg.find(jargon) == std::string::npos);
    std::remove(path.c_str());
  }
}

TEST_CASE("decode: absurd dimensions are refused from the header, before decoding") {
  // Headers only: no pixel data follows, so only a header check can produce
  // the size message (a decode attempt would fail with a different reason).
  struct Case {
    uint32_t w, h;
  };
  const std::string path = pola::test::temp_path("huge.png");
  for (const Case c : {Case{40000, 10}, Case{10, 40000}, Case{20000, 20000}}) {
    CAPTURE(c.w);
    CAPTURE(c.h);
    pola::test::write_file(path, pola::test::png_header_only(c.w, c.h));
    const std::string msg = error_of_file(path);
    CHECK(msg.find(path) != std::string::npos);
    CHECK_MESSAGE(msg.find("claims to be " + std::to_string(c.w) + "x" + std::to_string(c.h)) != std::string::npos, msg);
  }
  // Within the limits the same kind of file reaches the decoder and fails there.
  pola::test::write_file(path, pola::test::png_header_only(100, 100));
  const std::string no_pixels = error_of_file(path);
  CHECK_MESSAGE(no_pixels.find("truncated PNG data") != std::string::npos, no_pixels);
  // The limits are parameters.
  DecodeLimits tight;
  tight.max_side = 2;
  const Bytes png = pola::test::encode_png(3, 1, 8, 0, {1, 2, 3});
  CHECK_THROWS_AS(decode_image_from_memory(png.data(), png.size(), "x", 3, tight), pola::InputError);
  std::remove(path.c_str());
}
