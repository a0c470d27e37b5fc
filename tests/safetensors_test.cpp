#include "model/safetensors.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "model/error.h"

namespace lenscheck {
namespace {

namespace fs = std::filesystem;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / (std::string("safetensors_test_") + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }

  // Writes exactly `bytes` to a file in the test directory and returns its path.
  fs::path write_bytes(const std::string& bytes, const std::string& name = "t.safetensors") {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }

  // A safetensors file by hand: little-endian header length, the header text, the data bytes.
  fs::path write_raw(const std::string& header, const std::string& data = "") {
    return write_bytes(length_prefix(header.size()) + header + data);
  }

  static std::string length_prefix(uint64_t n) {
    std::string s(8, '\0');
    std::memcpy(s.data(), &n, 8);
    return s;
  }

  // open() must throw an InputError naming the file and containing `fragment`.
  static void expect_rejected(const fs::path& file, const std::string& fragment) {
    try {
      SafetensorsFile::open(file);
      FAIL() << "open() accepted a bad file; expected: " << fragment;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file.string()), std::string::npos) << what;
      EXPECT_NE(what.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << what;
      EXPECT_EQ(e.file(), file);
    }
  }

  fs::path dir_;
};

// A one-tensor header: {"x": {"dtype": ..., "shape": ..., "data_offsets": ...}}.
std::string one_tensor(const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return R"({"x":{"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}}";
}

template <typename T>
std::string raw(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), values.data(), s.size());
  return s;
}

// ---- round trip ----

TEST_F(SafetensorsTest, RoundTripPreservesValuesShapesMetadataAndOrder) {
  const double third = 1.0 / 3.0;
  std::vector<OutputTensor> tensors = {
      {"z.f64", DType::F64, {2, 3}, {third, -0.0, 1e-310, 1e300, -7.5, std::numeric_limits<double>::infinity()}},
      {"a.f32", DType::F32, {3}, {third, 1e-40, -2.5}},  // 1e-40 is an fp32 subnormal
      {"m.i64", DType::I64, {2, 2}, {0, -1, 9007199254740992.0, -9007199254740992.0}},
      {"scalar", DType::F32, {}, {42.25}},
      {"empty", DType::F64, {4, 0, 2}, {}},
      {"last", DType::I64, {1}, {7}},
  };
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "héllo \"quoted\""}};
  const fs::path file = dir_ / "rt.safetensors";
  write_safetensors(file, tensors, metadata);
  EXPECT_FALSE(fs::exists(file.string() + ".tmp"));

  const SafetensorsFile st = SafetensorsFile::open(file);
  EXPECT_EQ(st.path(), file);
  EXPECT_EQ(st.metadata(), metadata);
  ASSERT_EQ(st.entries().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorEntry& e = st.entries()[i];
    SCOPED_TRACE(tensors[i].name);
    EXPECT_EQ(e.name, tensors[i].name);  // data order is the written order
    EXPECT_EQ(e.dtype, tensors[i].dtype);
    EXPECT_EQ(e.shape, tensors[i].shape);
    EXPECT_EQ(e.numel(), tensors[i].values.size());
    EXPECT_EQ(st.find(e.name), &e);
  }
  EXPECT_EQ(st.find("missing"), nullptr);

  // Bit-identical: F64 as is, F32 exactly static_cast<float>, I64 exactly.
  const std::vector<double> f64 = st.read_f64(*st.find("z.f64"));
  for (size_t i = 0; i < f64.size(); ++i)
    EXPECT_EQ(std::bit_cast<uint64_t>(f64[i]), std::bit_cast<uint64_t>(tensors[0].values[i])) << i;
  const std::vector<float> f32 = st.read_f32(*st.find("a.f32"));
  for (size_t i = 0; i < f32.size(); ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(f32[i]), std::bit_cast<uint32_t>(static_cast<float>(tensors[1].values[i])));
  EXPECT_EQ(st.read_f64(*st.find("a.f32"))[0], static_cast<double>(static_cast<float>(third)));
  EXPECT_EQ(st.read_i64(*st.find("m.i64")),
            (std::vector<int64_t>{0, -1, 9007199254740992LL, -9007199254740992LL}));
  EXPECT_EQ(st.read_f32(*st.find("scalar")), std::vector<float>{42.25f});
  EXPECT_TRUE(st.read_f64(*st.find("empty")).empty());
  EXPECT_EQ(st.read_i64(*st.find("last")), std::vector<int64_t>{7});
}

TEST_F(SafetensorsTest, WriterAlignsDataAndOmitsEmptyMetadata) {
  const fs::path file = dir_ / "a.safetensors";
  write_safetensors(file, {{"x", DType::F32, {1}, {1.0}}}, {});
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 4);
  EXPECT_EQ(bytes.find("__metadata__"), std::string::npos);
  EXPECT_TRUE(SafetensorsFile::open(file).metadata().empty());
}

TEST_F(SafetensorsTest, WriterReplacesAnExistingFile) {
  const fs::path file = dir_ / "r.safetensors";
  write_safetensors(file, {{"old", DType::F64, {1}, {1.0}}}, {});
  write_safetensors(file, {{"new", DType::F64, {1}, {2.0}}}, {});
  const SafetensorsFile st = SafetensorsFile::open(file);
  ASSERT_EQ(st.entries().size(), 1u);
  EXPECT_EQ(st.entries()[0].name, "new");
}

TEST_F(SafetensorsTest, WriterRejectsNonIntegralI64) {
  const fs::path file = dir_ / "bad.safetensors";
  EXPECT_THROW(write_safetensors(file, {{"x", DType::I64, {1}, {1.5}}}, {}), std::invalid_argument);
  EXPECT_THROW(write_safetensors(file, {{"x", DType::I64, {1}, {1e19}}}, {}), std::invalid_argument);
  EXPECT_THROW(write_safetensors(file, {{"x", DType::I64, {1}, {std::nan("")}}}, {}), std::invalid_argument);
  EXPECT_FALSE(fs::exists(file));
  EXPECT_FALSE(fs::exists(file.string() + ".tmp"));
}

TEST_F(SafetensorsTest, WriterRejectsShapeValueMismatch) {
  EXPECT_THROW(write_safetensors(dir_ / "bad.safetensors", {{"x", DType::F32, {2, 2}, {1, 2, 3}}}, {}),
               std::invalid_argument);
}

TEST_F(SafetensorsTest, WriteToUnwritableLocationIsInputError) {
  const fs::path file = dir_ / "no-such-dir" / "out.safetensors";
  try {
    write_safetensors(file, {{"x", DType::F32, {1}, {1.0}}}, {});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
}

// ---- conversions ----

TEST_F(SafetensorsTest, Float16KnownBitPatterns) {
  const std::vector<uint16_t> bits = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x03FF, 0x8000, 0x7C00, 0xFC00, 0x7E00};
  const fs::path file = write_raw(one_tensor("F16", "[9]", "[0,18]"), raw(bits));
  const SafetensorsFile st = SafetensorsFile::open(file);
  const std::vector<float> f = st.read_f32(*st.find("x"));
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_EQ(f[2], 65504.0f);
  EXPECT_EQ(f[3], std::ldexp(1.0f, -24));                 // smallest subnormal
  EXPECT_EQ(f[4], std::ldexp(1023.0f, -24));              // largest subnormal
  EXPECT_EQ(std::bit_cast<uint32_t>(f[5]), 0x80000000u);  // -0
  EXPECT_EQ(f[6], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[7], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f[8]));
  const std::vector<double> d = st.read_f64(*st.find("x"));
  EXPECT_EQ(d[2], 65504.0);
  EXPECT_EQ(d[3], std::ldexp(1.0, -24));
  EXPECT_TRUE(std::isinf(d[6]));
  EXPECT_TRUE(std::isnan(d[8]));
}

TEST_F(SafetensorsTest, BFloat16KnownBitPatterns) {
  // 65280 is the nearest bf16 to 65504 (bf16 has only 8 significant bits); 0x0001 is 2^-133.
  const std::vector<uint16_t> bits = {0x3F80, 0xC000, 0x477F, 0x0001, 0x7F80, 0xFF80, 0x7FC0};
  const fs::path file = write_raw(one_tensor("BF16", "[7]", "[0,14]"), raw(bits));
  const SafetensorsFile st = SafetensorsFile::open(file);
  const std::vector<float> f = st.read_f32(*st.find("x"));
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_EQ(f[2], 65280.0f);
  EXPECT_EQ(f[3], std::ldexp(1.0f, -133));
  EXPECT_EQ(f[4], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[5], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f[6]));
  EXPECT_EQ(st.read_f64(*st.find("x"))[3], std::ldexp(1.0, -133));
}

TEST_F(SafetensorsTest, F64ReadAsF32IsRounded) {
  const fs::path file = write_raw(one_tensor("F64", "[1]", "[0,8]"), raw(std::vector<double>{0.1}));
  const SafetensorsFile st = SafetensorsFile::open(file);
  EXPECT_EQ(st.read_f32(*st.find("x"))[0], 0.1f);
}

TEST_F(SafetensorsTest, UnalignedDataIsRead) {
  // 8 + 55 header bytes: the data section starts at offset 63, so the double is not aligned.
  const std::string header = R"({"x":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})";
  const fs::path file = write_raw(header, raw(std::vector<double>{3.5}));
  const SafetensorsFile st = SafetensorsFile::open(file);
  EXPECT_EQ(st.read_f64(*st.find("x")), std::vector<double>{3.5});
}

TEST_F(SafetensorsTest, SmallIntegerDtypesReadAsI64) {
  const std::string header =
      R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I16","shape":[1],"data_offsets":[8,10]},)"
      R"("c":{"dtype":"I8","shape":[1],"data_offsets":[10,11]},)"
      R"("d":{"dtype":"U8","shape":[1],"data_offsets":[11,12]},)"
      R"("e":{"dtype":"BOOL","shape":[2],"data_offsets":[12,14]}})";
  std::string data = raw(std::vector<int32_t>{-5, 2147483647}) + raw(std::vector<int16_t>{-300}) +
                     raw(std::vector<int8_t>{-7}) + raw(std::vector<uint8_t>{200}) + raw(std::vector<uint8_t>{0, 1});
  const SafetensorsFile st = SafetensorsFile::open(write_raw(header, data));
  EXPECT_EQ(st.read_i64(*st.find("a")), (std::vector<int64_t>{-5, 2147483647}));
  EXPECT_EQ(st.read_i64(*st.find("b")), std::vector<int64_t>{-300});
  EXPECT_EQ(st.read_i64(*st.find("c")), std::vector<int64_t>{-7});
  EXPECT_EQ(st.read_i64(*st.find("d")), std::vector<int64_t>{200});
  EXPECT_EQ(st.read_i64(*st.find("e")), (std::vector<int64_t>{0, 1}));
}

TEST_F(SafetensorsTest, IntegerTensorReadAsFloatIsInputError) {
  const SafetensorsFile st = SafetensorsFile::open(write_raw(one_tensor("I64", "[1]", "[0,8]"), std::string(8, '\0')));
  try {
    st.read_f32(*st.find("x"));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(st.read_f64(*st.find("x")), InputError);
}

TEST_F(SafetensorsTest, FloatTensorReadAsIntegerIsInputError) {
  const SafetensorsFile st = SafetensorsFile::open(write_raw(one_tensor("F32", "[1]", "[0,4]"), std::string(4, '\0')));
  try {
    st.read_i64(*st.find("x"));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
}

// ---- accepted oddities ----

TEST_F(SafetensorsTest, HeaderPaddedWithSpacesIsAccepted) {
  const SafetensorsFile st =
      SafetensorsFile::open(write_raw(one_tensor("F32", "[1]", "[0,4]") + "       ", raw(std::vector<float>{2.0f})));
  EXPECT_EQ(st.read_f32(*st.find("x")), std::vector<float>{2.0f});
}

TEST_F(SafetensorsTest, EmptyHeaderObjectWithNoDataIsAccepted) {
  const SafetensorsFile st = SafetensorsFile::open(write_raw("{}"));
  EXPECT_TRUE(st.entries().empty());
}

TEST_F(SafetensorsTest, EntriesAreInDataOrderNotHeaderOrder) {
  const std::string header = R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
                             R"("a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  const SafetensorsFile st = SafetensorsFile::open(write_raw(header, "\x01\x02"));
  ASSERT_EQ(st.entries().size(), 2u);
  EXPECT_EQ(st.entries()[0].name, "a");
  EXPECT_EQ(st.entries()[1].name, "b");
  EXPECT_EQ(st.read_i64(*st.find("b")), std::vector<int64_t>{2});
}

// ---- rejected files: one test per problem ----

TEST_F(SafetensorsTest, MissingFileIsRejected) { expect_rejected(dir_ / "nope.safetensors", "cannot open"); }

TEST_F(SafetensorsTest, EmptyFileIsRejected) { expect_rejected(write_bytes(""), "shorter than 8 bytes"); }

TEST_F(SafetensorsTest, FileShorterThan8BytesIsRejected) {
  expect_rejected(write_bytes(std::string("\x02\0\0\0{}", 6), "short.safetensors"), "shorter than 8 bytes");
}

TEST_F(SafetensorsTest, HeaderLengthLargerThanFileIsRejected) {
  expect_rejected(write_bytes(length_prefix(100) + "{}"), "larger than the file");
}

TEST_F(SafetensorsTest, HeaderLengthAbove100MBIsRejected) {
  expect_rejected(write_bytes(length_prefix(100'000'001) + "{}"), "100 MB");
}

TEST_F(SafetensorsTest, HugeHeaderLengthIsRejected) {
  // Near 2^64: must not wrap around when added to 8.
  expect_rejected(write_bytes(length_prefix(~uint64_t{0}) + "{}"), "100 MB");
}

TEST_F(SafetensorsTest, HeaderNotJsonIsRejected) { expect_rejected(write_raw("{\"x\": "), "not valid JSON"); }

TEST_F(SafetensorsTest, EmptyHeaderIsRejected) { expect_rejected(write_raw(""), "not valid JSON"); }

TEST_F(SafetensorsTest, HeaderPaddedWithGarbageIsRejected) {
  expect_rejected(write_raw(std::string("{}") + '\0' + '\0'), "not valid JSON");
  expect_rejected(write_raw(std::string("{}") + '\0' + "xyz"), "not valid JSON");
  expect_rejected(write_raw("{}  x"), "not valid JSON");
}

TEST_F(SafetensorsTest, HeaderNotObjectIsRejected) { expect_rejected(write_raw("[1, 2]"), "not a JSON object"); }

TEST_F(SafetensorsTest, MetadataNotObjectIsRejected) {
  expect_rejected(write_raw(R"({"__metadata__": "pt"})"), "__metadata__ is not a JSON object");
}

TEST_F(SafetensorsTest, MetadataValueNotStringIsRejected) {
  expect_rejected(write_raw(R"({"__metadata__": {"ok": "yes", "layers": 4}})"), "'layers' is not a string");
}

TEST_F(SafetensorsTest, EntryNotObjectIsRejected) {
  expect_rejected(write_raw(R"({"x": [1, 2]})"), "tensor 'x': header entry is not a JSON object");
}

TEST_F(SafetensorsTest, EntryMissingKeyIsRejected) {
  expect_rejected(write_raw(R"({"x": {"dtype": "F32", "shape": [0]}})"), "tensor 'x': missing 'data_offsets'");
}

TEST_F(SafetensorsTest, EntryExtraKeyIsRejected) {
  expect_rejected(write_raw(R"({"x": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0], "bias": 1}})"),
                  "tensor 'x': unexpected key 'bias'");
}

TEST_F(SafetensorsTest, DtypeNotStringIsRejected) {
  expect_rejected(write_raw(R"({"x": {"dtype": 32, "shape": [0], "data_offsets": [0, 0]}})"), "dtype is not a string");
}

TEST_F(SafetensorsTest, UnknownDtypeIsRejected) {
  expect_rejected(write_raw(one_tensor("F8_E4M3", "[1]", "[0,1]"), "\x01"), "tensor 'x': unknown dtype 'F8_E4M3'");
}

TEST_F(SafetensorsTest, ShapeNotArrayIsRejected) {
  expect_rejected(write_raw(one_tensor("F32", "4", "[0,16]"), std::string(16, '\0')), "shape is not an array");
}

TEST_F(SafetensorsTest, NegativeShapeIsRejected) {
  expect_rejected(write_raw(one_tensor("F32", "[2,-1]", "[0,0]")), "not a non-negative integer");
}

TEST_F(SafetensorsTest, FractionalShapeIsRejected) {
  expect_rejected(write_raw(one_tensor("F32", "[1.5]", "[0,4]"), std::string(4, '\0')), "not a non-negative integer");
}

TEST_F(SafetensorsTest, OffsetsNotTwoIntegersIsRejected) {
  expect_rejected(write_raw(one_tensor("F32", "[1]", "[0,4,8]"), std::string(8, '\0')),
                  "data_offsets is not an array of 2 non-negative integers");
}

TEST_F(SafetensorsTest, NegativeOffsetIsRejected) {
  expect_rejected(write_raw(one_tensor("F32", "[0]", "[-4,0]")), "data_offsets is not an array of 2");
}

TEST_F(SafetensorsTest, OffsetsBeginAfterEndIsRejected) {
  expect_rejected(write_raw(one_tensor("U8", "[0]", "[4,0]"), std::string(4, '\0')), "begin 4 is after end 0");
}

TEST_F(SafetensorsTest, ShapeSizeMismatchIsRejected) {
  expect_rejected(write_raw(one_tensor("F32", "[2,3]", "[0,20]"), std::string(20, '\0')),
                  "shape [2, 3] of F32 needs 24 bytes but data_offsets span 20");
}

TEST_F(SafetensorsTest, ShapeProductOverflowIsRejected) {
  // 2^32 * 2^32 wraps to 0 in 64 bits, which would "match" an empty span.
  expect_rejected(write_raw(one_tensor("U8", "[4294967296,4294967296]", "[0,0]")), "overflows");
  // 2^62 elements of F32: the element count fits, the byte count does not.
  expect_rejected(write_raw(one_tensor("F32", "[4611686018427387904]", "[0,0]")), "overflows");
}

TEST_F(SafetensorsTest, OffsetsBeyondDataSectionIsRejected) {
  expect_rejected(write_raw(one_tensor("F32", "[2]", "[0,8]"), std::string(4, '\0')), "beyond the data section");
}

TEST_F(SafetensorsTest, DuplicateTensorNameIsRejected) {
  const std::string e1 = R"("x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  const std::string e2 = R"("x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]})";
  expect_rejected(write_raw("{" + e1 + "," + e2 + "}", "ab"), "duplicate tensor name 'x'");
}

TEST_F(SafetensorsTest, DuplicateMetadataKeyIsRejected) {
  expect_rejected(write_raw(R"({"__metadata__": {"k": "a", "k": "b"}})"), "duplicate __metadata__ key 'k'");
}

TEST_F(SafetensorsTest, DuplicateKeyInEntryIsRejected) {
  expect_rejected(write_raw(R"({"x":{"dtype":"U8","dtype":"F32","shape":[0],"data_offsets":[0,0]}})"),
                  "duplicate key 'dtype' in header entry 'x'");
}

TEST_F(SafetensorsTest, OverlappingTensorsAreRejected) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})";
  expect_rejected(write_raw(header, std::string(6, '\0')), "tensors 'a' and 'b' overlap");
}

TEST_F(SafetensorsTest, HoleBetweenTensorsIsRejected) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                             R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})";
  expect_rejected(write_raw(header, std::string(6, '\0')), "2 unused bytes (a hole) before tensor 'b', after 'a'");
}

TEST_F(SafetensorsTest, FirstTensorNotAtZeroIsRejected) {
  expect_rejected(write_raw(one_tensor("U8", "[2]", "[2,4]"), std::string(4, '\0')),
                  "2 unused bytes (a hole) before tensor 'x'");
}

TEST_F(SafetensorsTest, TrailingBytesAfterLastTensorAreRejected) {
  expect_rejected(write_raw(one_tensor("F32", "[1]", "[0,4]"), std::string(7, '\0')),
                  "3 trailing bytes after the last tensor");
}

TEST_F(SafetensorsTest, DataWithoutTensorsIsRejected) {
  expect_rejected(write_raw("{}", "abc"), "3 trailing bytes");
}

TEST_F(SafetensorsTest, DirectoryIsRejected) { expect_rejected(dir_, "not a regular file"); }

}  // namespace
}  // namespace lenscheck
