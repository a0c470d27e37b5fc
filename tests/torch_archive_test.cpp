// pytorch_model.bin, torch.save's zip archive, read by lenscheck itself: the zip reader, the weights-only
// unpickler, and checkpoints converted by torch itself loading bit for bit as their model.safetensors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>

#include "model/arithmetic.h"
#include "model/checkpoint.h"
#include "model/error.h"
#include "model/sha256.h"
#include "model/torch_archive.h"
#include "tests/test_support.h"
#include "tests/torch_archive_writer.h"

using namespace lenscheck;
namespace fs = std::filesystem;

namespace {

std::string f32_bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

const std::vector<float> kSix = {1.5f, -2, 3.25f, 4, -5.5f, 6};

// Six views of three storages, each a way torch.save stores a tensor: contiguous, transposed, a slice,
// expanded (stride 0), F16, and an I64 buffer.
std::vector<test::TensorView> six_views() {
  return {{"matrix", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}},
          {"transposed", "FloatStorage", "0", 6, 0, {3, 2}, {1, 3}},
          {"slice", "FloatStorage", "0", 6, 4, {2}, {1}},
          {"expanded", "FloatStorage", "0", 6, 1, {2, 2}, {0, 1}},
          {"halves", "HalfStorage", "1", 3, 0, {3}, {1}},
          {"ids", "LongStorage", "2", 2, 0, {2}, {1}}};
}
std::vector<std::pair<std::string, std::string>> six_views_storages() {
  const std::string halves("\x00\x3c\x00\xc0\x00\x38", 6);  // 1, -2, 0.5
  const std::string ids("\x07\0\0\0\0\0\0\0\x09\0\0\0\0\0\0\0", 16);
  return {{"0", f32_bytes(kSix)}, {"1", halves}, {"2", ids}};
}
std::string small_archive(bool zip64 = false) {
  return test::torch_archive_of(test::state_dict_pickle(six_views()).bytes(), six_views_storages(), zip64);
}

fs::path write_archive(const fs::path& dir, const std::string& bytes) {
  const fs::path file = dir / "pytorch_model.bin";
  test::write_file(file, bytes);
  return file;
}

// TorchArchive::open must refuse `file` with an InputError naming it and saying `fragment`.
void expect_refused(const fs::path& file, const std::string& fragment) {
  try {
    TorchArchive::open(file);
    ADD_FAILURE() << "no InputError; expected one saying " << fragment;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), file) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// The archive of a state dict whose data.pkl is `pickle`, beside the storages of six_views().
fs::path archive_with_pickle(const std::string& name, const std::string& pickle) {
  return write_archive(test::temp_dir(name), test::torch_archive_of(pickle, six_views_storages()));
}

}  // namespace

TEST(TorchArchive, ReadsEveryViewOfAStateDictByItsStrides) {
  for (bool zip64 : {false, true}) {
    const TorchArchive t = TorchArchive::open(write_archive(test::temp_dir("six"), small_archive(zip64)));
    ASSERT_EQ(t.entries().size(), 6u);
    EXPECT_EQ(t.entries()[1].name, "transposed");
    EXPECT_EQ(t.entries()[1].shape, (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(t.entries()[4].dtype, DType::F16);
    EXPECT_EQ(t.read_f32(*t.find("matrix")), kSix);
    EXPECT_EQ(t.read_f32(*t.find("transposed")), (std::vector<float>{1.5f, 4, -2, -5.5f, 3.25f, 6}));
    EXPECT_EQ(t.read_f32(*t.find("slice")), (std::vector<float>{-5.5f, 6}));
    EXPECT_EQ(t.read_f32(*t.find("expanded")), (std::vector<float>{-2, 3.25f, -2, 3.25f}));
    EXPECT_EQ(t.read_f32(*t.find("halves")), (std::vector<float>{1, -2, 0.5f}));
    EXPECT_EQ(t.find("absent"), nullptr);
    try {
      t.read_f32(*t.find("ids"));
      ADD_FAILURE() << "an I64 tensor read as F32";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("tensor 'ids' has integer dtype I64"), std::string::npos) << e.what();
    }
  }
}

// Each payload runs `touch MARKER` (or opens MARKER for writing) when Python's own pickle loads it, which
// the test shows first; lenscheck, through its API and `lenscheck inspect` (exit code 2), names the file
// and the global or opcode, and the marker never appears.
TEST(TorchArchive, PicklesThatWouldRunCodeAreRefusedNamingTheGlobalOrOpcode) {
  const fs::path dir = test::temp_dir("payloads");  // a checkpoint but for its weights
  for (const char* f : {"config.json", "vocab.txt"}) fs::copy_file(test::fixture("tiny-prefixed") / f, dir / f);
  const fs::path marker = dir / "marker";
  const std::string touch = "touch " + marker.string(), create = "open('" + marker.string() + "', 'w').close()";
  struct Payload {
    std::string pickle, named;
  };
  const std::vector<Payload> payloads = {
      {test::Pickle().global("posix", "system").str(touch).op("\x85R.").bytes(), "the global posix.system"},
      {test::Pickle().global("os", "system").str(touch).op("\x85R.").bytes(), "the global os.system"},
      {test::Pickle().global("builtins", "eval").str(create).op("\x85R.").bytes(), "the global builtins.eval"},
      {test::Pickle().global("builtins", "exec").str(create).op("\x85R.").bytes(), "the global builtins.exec"},
      // As a state dict's value: the interpreter stops at the global wherever it stands.
      {test::Pickle().global("collections", "OrderedDict").op(")R(").str("x").global("posix", "system").str(touch)
           .op("\x85Ru.").bytes(), "the global posix.system"},
      {test::Pickle().op("(").str(touch).raw("iposix\nsystem\n.").bytes(), "INST at byte"},
      {test::Pickle().str("posix").str("system").op("\x93").str(touch).op("\x85R.").bytes(), "STACK_GLOBAL at byte 23"},
  };
  for (const Payload& p : payloads) {
    const fs::path file = write_archive(dir, test::torch_archive_of(p.pickle, {}));
    const std::string python = std::string(LENSCHECK_TORCH_PYTHON) + " -c \"import pickle, sys, zipfile; "
                               "pickle.loads(zipfile.ZipFile(sys.argv[1]).read('archive/data.pkl'))\" " +
                               test::quoted(file) + " >/dev/null 2>&1";
    EXPECT_NE(std::system(python.c_str()), -1);
    ASSERT_TRUE(fs::exists(marker)) << "the payload for " << p.named << " does not run in Python's pickle";
    fs::remove(marker);
    expect_refused(file, "archive/data.pkl: ");
    expect_refused(file, p.named);
    const test::CommandResult cli = test::run_cli("inspect --model " + test::quoted(dir));
    EXPECT_EQ(cli.exit_code, 2) << cli.output;
    EXPECT_NE(cli.output.find(file.string() + ": archive/data.pkl: "), std::string::npos) << cli.output;
    EXPECT_NE(cli.output.find(p.named), std::string::npos) << cli.output;
    EXPECT_FALSE(fs::exists(marker)) << p.named;
  }
}

TEST(TorchArchive, OpcodesAStateDictDoesNotNeedAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {test::Pickle().global("collections", "OrderedDict").op(")\x81.").bytes(), "NEWOBJ at byte 28"},
      {test::Pickle().op("(").global("collections", "OrderedDict").op("o.").bytes(), "OBJ at byte 28"},
      {test::Pickle().raw("\x82\x01.").bytes(), "EXT1 at byte 2"},
      {test::Pickle().raw("G@\x09!\xfbTD-\x18.").bytes(), "BINFLOAT at byte 2"},
      {test::Pickle().raw("]").bytes(), "EMPTY_LIST at byte 2"},
      {test::Pickle().raw("\xff.").bytes(), "byte 0xff (no pickle opcode) at byte 2"},
  };
  for (const auto& [pickle, named] : cases) expect_refused(archive_with_pickle("opcode", pickle), named);
}

TEST(TorchArchive, MalformedPicklesAreInputErrors) {
  using V = test::TensorView;
  auto dict_of = [](std::vector<V> views) { return test::state_dict_pickle(views).bytes(); };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "ends without STOP"},
      {"\x80\x02", "ends without STOP"},
      {"\x80\x02.", "STOP at byte 2: the stack is empty"},
      {"\x80\x02)).", "STOP at byte 4: it leaves values on the stack"},
      {"\x80\x02}.junk", "STOP at byte 3: 4 bytes follow it"},
      {"\x80\x06}.", "PROTO at byte 0: pickle protocol 6"},
      {"\x80\x02h\x05", "BINGET at byte 2: memo slot 5 is empty"},
      {"\x80\x02X\xff\xff\xff\x7f", "BINUNICODE at byte 2: its argument needs 2147483647 bytes, 0 are left"},
      {std::string("\x80\x02}X\x02\0\0\0\xc3(", 11), "BINUNICODE at byte 3: its string is not UTF-8"},
      {"\x80\x02\x8a\x09", "LONG1 at byte 2: an integer of 9 bytes does not fit in 64 bits"},
      {"\x80\x02" "cposix", "GLOBAL at byte 2: its argument has no end of line"},
      {"\x80\x02).", "data.pkl holds a tuple, not a state dict"},
      {test::Pickle().op("}").str("a").integer(1).op("s.").bytes(), "state dict entry 'a' is an int, not a tensor"},
      {test::Pickle().op("}").str("a").integer(1).op("s").str("a").integer(2).op("s.").bytes(),
       "SETITEM at byte 26: the key 'a' is set twice"},
      {test::Pickle().op("}").integer(1).integer(1).op("s.").bytes(), "its key is an int; a state dict's keys are str"},
      {test::Pickle().op("}(").str("a").op("u.").bytes(), "SETITEMS at byte 10: it has a key without a value"},
      {"\x80\x02u", "SETITEMS at byte 2: no MARK precedes it"},
      {"\x80\x02(R", "REDUCE at byte 3: the stack is empty"},
      {test::Pickle().global("torch", "FloatStorage").op(")R.").bytes(), "it calls a storage type"},
      {test::Pickle().global("collections", "OrderedDict").ints({1}).op("R.").bytes(),
       "OrderedDict is called with arguments"},
      {"\x80\x02}}b.", "BUILD at byte 4: it sets the state of a dict to a dict"},
      {test::Pickle().str("storage").op("\x85Q.").bytes(), "BINPERSID at byte 15: its persistent id is not"},
      {dict_of({{"w", "FloatStorage", "9", 6, 0, {6}, {1}}}), "storage '9' has no entry archive/data/9"},
      {dict_of({{"w", "FloatStorage", "0", 7, 0, {7}, {1}}}), "storage '0' of 7 F32 elements needs 28 bytes, its entry holds 24"},
      {dict_of({{"w", "FloatStorage", "0", 6, 5, {2}, {1}}}),
       "a view (offset 5, size [2], stride [1]) reaches past its storage archive/data/0 of 6 elements"},
      {dict_of({{"w", "FloatStorage", "0", 6, 0, {2, 3}, {4, 1}}}), "a view (offset 0, size [2, 3], stride [4, 1])"},
      {dict_of({{"w", "FloatStorage", "0", 6, 7, {0}, {1}}}), "a view (offset 7, size [0], stride [1])"},
      {dict_of({{"w", "FloatStorage", "0", 6, 0, {6}, {1}}, {"v", "HalfStorage", "0", 12, 0, {6}, {1}}}),
       "storage '0' is named again as 12 F16 elements, first as 6 F32"},
      {dict_of({{"w", "FloatStorage", "0", 6, 0, {6}, {1, 1}}}), "_rebuild_tensor_v2's arguments are not"},
      {dict_of({{"w", "FloatStorage", "0", 6, -1, {6}, {1}}}), "_rebuild_tensor_v2's arguments are not"},
  };
  for (const auto& [pickle, fragment] : cases) expect_refused(archive_with_pickle("malformed", pickle), fragment);
}

TEST(TorchArchive, ArchivesOtherThanTorchSavesAreNamed) {
  const fs::path dir = test::temp_dir("formats");
  expect_refused(write_archive(dir, "hello"), "is not a zip archive: 5 bytes");
  expect_refused(write_archive(dir, std::string(100, 'x')), "is not a zip archive: it has no end of central directory");
  expect_refused(write_archive(dir, std::string("\x80\x02\x8a\x0a", 4) + std::string(100, '\0')), "legacy format");
  expect_refused(write_archive(dir, test::zip_of({{"folder/other", "x"}})), "it has no <archive>/data.pkl");
  expect_refused(write_archive(dir, test::zip_of({{"data.pkl", "x"}})), "it has no <archive>/data.pkl");
  expect_refused(write_archive(dir, test::zip_of({{"a/x", "1"}, {"a/x", "1"}})), "zip entry 'a/x' appears twice");
  const std::string pickle = test::state_dict_pickle(six_views()).bytes();
  expect_refused(write_archive(dir, test::zip_of({{"archive/data.pkl", pickle}, {"archive/byteorder", "big"}})),
                 "archive/byteorder: the tensors are not little-endian");
  std::string corrupt = small_archive();
  corrupt[corrupt.find("little")] = 'L';
  expect_refused(write_archive(dir, corrupt), "zip entry 'archive/byteorder': its data's CRC-32 is");

  // The method and flag fields of the first entry, in its local header and its central record.
  auto patched = [&](size_t local_at, size_t central_at, uint16_t value) {
    std::string zip = small_archive();
    const size_t central = zip.find("PK\x01\x02");
    for (size_t at : {local_at, central + central_at}) {
      zip[at] = static_cast<char>(value & 0xff);
      zip[at + 1] = static_cast<char>(value >> 8);
    }
    return write_archive(dir, zip);
  };
  expect_refused(patched(8, 10, 8), "zip entry 'archive/data.pkl' is compressed (method 8, deflate)");
  expect_refused(patched(6, 8, 1), "zip entry 'archive/data.pkl' is encrypted");

  // An entry whose local header lies inside another's data: its bytes would be read under two names.
  const std::string inner = test::zip_of({{"b", "payload"}});
  std::string zip = test::zip_of({{"a", inner.substr(0, 30 + 1 + 7)}, {"b", "payload"}});
  const size_t second = zip.find("PK\x01\x02", zip.find("PK\x01\x02") + 1);
  zip.replace(second + 42, 4, std::string("\x1f\0\0\0", 4));  // "b"'s local header: at 31, in "a"'s data
  expect_refused(write_archive(dir, zip), "zip entries 'a' and 'b' overlap");
}

namespace {

// Archives to break: the small one as stored entries and with zip64 extra fields (every size and offset
// the sentinel), and a state dict torch 1.13 saved (the torch_archive fuzzer's seed): its local headers
// pad the data with extra fields, data descriptors follow it, and zip64 end records close it.
struct Layout {
  std::string name, bytes;
  bool zip64_extras;
};
std::vector<Layout> layouts() {
  return {{"stored", small_archive(false), false},
          {"zip64", small_archive(true), true},
          {"torch.save", test::read_file(test::source_dir() / "fixtures/fuzz/torch_archive/state-dict.bin"), false}};
}

}  // namespace

TEST(TorchArchive, ReadsTheViewsTorchSaveWrote) {
  const TorchArchive t = TorchArchive::open(test::source_dir() / "fixtures/fuzz/torch_archive/state-dict.bin");
  ASSERT_EQ(t.entries().size(), 7u);
  const std::vector<float> query = t.read_f32(*t.find("encoder.layer.0.attention.self.query.weight"));
  const std::vector<float> key = t.read_f32(*t.find("encoder.layer.0.attention.self.key.weight"));  // its transpose
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j) EXPECT_EQ(key[i * 4 + j], query[j * 4 + i]) << i << ", " << j;
  EXPECT_EQ(t.read_f32(*t.find("encoder.layer.0.attention.self.query.bias")),
            std::vector<float>(query.begin() + 4, query.begin() + 8));
  const TorchTensor& ids = *t.find("embeddings.position_ids");
  EXPECT_EQ(ids.dtype, DType::I64);
  EXPECT_EQ(ids.shape, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(ids.stride, (std::vector<int64_t>{0, 1}));  // expanded: both rows are one storage of 8
  EXPECT_EQ(t.find("embeddings.LayerNorm.bias")->dtype, DType::BF16);
}

TEST(TorchArchive, TruncatedArchivesAreInputErrorsAtEveryLength) {
  const fs::path dir = test::temp_dir("truncated");
  for (const Layout& layout : layouts()) {
    for (size_t length = 0; length < layout.bytes.size(); ++length) {
      const fs::path file = write_archive(dir, layout.bytes.substr(0, length));
      try {
        TorchArchive::open(file);
        ADD_FAILURE() << layout.name << ": the first " << length << " of " << layout.bytes.size() << " bytes loaded";
      } catch (const InputError& e) {
        EXPECT_EQ(e.file(), file) << e.what();
      }
    }
  }
}

// Every size, offset and count the records declare, made to lie: each is an InputError naming the file.
TEST(TorchArchive, LyingSizesAndOffsetsAreInputErrors) {
  const fs::path dir = test::temp_dir("lying");
  size_t lies = 0;
  for (const Layout& layout : layouts()) {
    const std::string& whole = layout.bytes;
    // `same`: a value that says the same as the one written, which no reader could call a lie.
    auto lie_at = [&](size_t at, int bytes, std::optional<uint64_t> same = std::nullopt) {
      uint64_t value = 0;
      std::memcpy(&value, whole.data() + at, static_cast<size_t>(bytes));
      const uint64_t max = bytes == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1;
      for (uint64_t lie : {value + 1, value - 1, max, max / 2, uint64_t{0}}) {
        if ((lie & max) == value || (lie & max) == same) continue;
        std::string bytes_of_lie;
        test::append_le(bytes_of_lie, lie, bytes);
        std::string zip = whole;
        zip.replace(at, static_cast<size_t>(bytes), bytes_of_lie);
        const fs::path file = write_archive(dir, zip);
        ++lies;
        try {
          TorchArchive::open(file);
          ADD_FAILURE() << layout.name << ": a lie of " << lie << " at byte " << at << " (was " << value << ") loaded";
        } catch (const InputError& e) {
          EXPECT_EQ(e.file(), file) << e.what();
        }
      }
    };
    for (size_t at = whole.find("PK\x03\x04"); at != std::string::npos; at = whole.find("PK\x03\x04", at + 1)) {
      lie_at(at + 26, 2);  // name length
      lie_at(at + 28, 2);  // extra field length
    }
    const size_t first = whole.find("PK\x01\x02");
    for (size_t at = first; at != std::string::npos; at = whole.find("PK\x01\x02", at + 1)) {
      for (auto [field, bytes] : {std::pair{16, 4}, {20, 4}, {24, 4}, {28, 2}, {30, 2}, {32, 2}})
        lie_at(at + static_cast<size_t>(field), bytes);
      // In place of the zip64 sentinel, an offset of 0 is the first entry's true offset.
      lie_at(at + 42, 4, layout.zip64_extras && at == first ? std::optional<uint64_t>(0) : std::nullopt);
      if (layout.zip64_extras)  // the zip64 extra field's sizes and offset, after the record and its name
        for (size_t field : {50, 58, 66}) lie_at(at + field + static_cast<uint8_t>(whole[at + 28]), 8);
    }
    const size_t end = whole.rfind("PK\x05\x06"), record = whole.rfind("PK\x06\x06");
    for (auto [field, bytes] : {std::pair{8, 2}, {10, 2}, {20, 2}}) lie_at(end + static_cast<size_t>(field), bytes);
    // Where a zip64 record follows, the sentinel in place of the directory's size or offset says "see it".
    for (size_t field : {12, 16})
      lie_at(end + field, 4, record != std::string::npos ? std::optional<uint64_t>(0xffffffff) : std::nullopt);
    if (record != std::string::npos) {
      for (size_t field : {24, 32, 40, 48}) lie_at(record + field, 8);
      lie_at(whole.rfind("PK\x06\x07") + 8, 8);
    }
  }
  EXPECT_GT(lies, 900u);  // every record found
}

// ----------------------------------------------------------------- checkpoints torch.save wrote

namespace {

fs::path converted(const std::string& name) { return test::fixture("pytorch-bin") / name; }

// The same encoder, parameter for parameter, bit for bit; and the same notes.
void expect_same_weights(const Checkpoint& a, const Checkpoint& b, const std::function<float(float)>& expected) {
  ASSERT_EQ(a.config.num_hidden_layers, b.config.num_hidden_layers);
  std::vector<const Param*> theirs;
  for_each_param(b.config, b.weights, [&](const std::string&, const Param& p) { theirs.push_back(&p); });
  size_t i = 0;
  for_each_param(a.config, a.weights, [&](const std::string& name, const Param& p) {
    const Param& q = *theirs[i++];
    ASSERT_EQ(p.shape, q.shape) << name;
    ASSERT_EQ(p.values.size(), q.values.size()) << name;
    std::vector<float> want(q.values.size());
    for (size_t k = 0; k < want.size(); ++k) want[k] = expected(q.values[k]);
    EXPECT_EQ(std::memcmp(p.values.data(), want.data(), want.size() * sizeof(float)), 0) << name;
  });
  EXPECT_EQ(a.prefix, b.prefix);
  EXPECT_EQ(a.ignored, b.ignored);
}

}  // namespace

TEST(TorchCheckpoint, TorchSaveArchivesLoadBitForBitAsTheirSafetensors) {
  const std::vector<std::pair<fs::path, std::string>> pairs = {
      {test::bert_mini(), "bert-mini"},
      {test::bert_mini(), "bert-mini-views"},
      {test::fixture("tiny-prefixed"), "tiny-prefixed"},
      {LENSCHECK_MINILM, "all-MiniLM-L6-v2"}};
  for (const auto& [source, name] : pairs) {
    SCOPED_TRACE(name);
    const Checkpoint from_bin = load_checkpoint(converted(name));
    const Checkpoint from_safetensors = load_checkpoint(source);
    expect_same_weights(from_bin, from_safetensors, [](float x) { return x; });
    EXPECT_EQ(from_bin.notes, from_safetensors.notes);
    EXPECT_EQ(from_bin.stored_dtypes, from_safetensors.stored_dtypes);
    EXPECT_EQ(from_bin.weights_file, converted(name) / "pytorch_model.bin");
    EXPECT_EQ(from_bin.model_sha256, sha256_file(converted(name) / "pytorch_model.bin"));
    EXPECT_TRUE(from_bin.weights_metadata.empty());
    EXPECT_EQ(from_safetensors.weights_file, source / "model.safetensors");
  }
}

TEST(TorchCheckpoint, HalfAndBfloat16WeightsAreTorchsRoundingOfTheSame) {
  const Checkpoint f32 = load_checkpoint(test::bert_mini());
  for (auto [name, format, dtype] : {std::tuple{"bert-mini-f16", kBinary16, "F16"},
                                     std::tuple{"bert-mini-bf16", kBfloat16, "BF16"}}) {
    SCOPED_TRACE(name);
    const Checkpoint ck = load_checkpoint(converted(name));
    expect_same_weights(ck, f32, [format = format](float x) { return static_cast<float>(round_to(format, x)); });
    EXPECT_EQ(ck.stored_dtypes, (std::map<std::string, size_t>{{dtype, 5 + 4 * 16}}));
    ASSERT_EQ(ck.notes.size(), 1u);
    EXPECT_EQ(ck.notes[0], std::string(dtype) + " weights converted to the working precision F32");
  }
}

TEST(TorchCheckpoint, TheLegacyFormatIsRefusedWithTheCommandThatConvertsIt) {
  try {
    load_checkpoint(converted("tiny-prefixed-legacy"));
    FAIL() << "the legacy format loaded";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), converted("tiny-prefixed-legacy") / "pytorch_model.bin");
    EXPECT_NE(e.problem().find("legacy format"), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find("torch.save(torch.load('pytorch_model.bin', weights_only=True)"), std::string::npos)
        << e.what();
  }
}

TEST(TorchCheckpoint, ModelSafetensorsIsReadWhereBothFilesAre) {
  const fs::path dir = test::temp_dir("both");
  for (const char* f : {"config.json", "vocab.txt", "model.safetensors"})
    fs::copy_file(test::fixture("tiny-prefixed") / f, dir / f);
  test::write_file(dir / "pytorch_model.bin", "not an archive");
  const Checkpoint ck = load_checkpoint(dir);
  EXPECT_EQ(ck.weights_file, dir / "model.safetensors");
  EXPECT_EQ(ck.model_sha256, sha256_file(dir / "model.safetensors"));
}

TEST(TorchCheckpoint, InspectShowsTheWeightsFileAndItsSha256) {
  const test::CommandResult r = test::run_cli("inspect --model " + test::quoted(converted("bert-mini")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("weights: pytorch_model.bin (SHA-256 " +
                          sha256_file(converted("bert-mini") / "pytorch_model.bin") + ")"),
            std::string::npos) << r.output;
}

TEST(TorchCheckpoint, VerifyJudgesATorchSaveCheckpointAndItsReportNamesTheWeightsFile) {
  const fs::path report = test::temp_dir("verify") / "verify.md";
  const test::CommandResult r = test::run_cli("verify --model " + test::quoted(converted("bert-mini")) + " --sentences " +
                                              test::quoted(test::one_sentence_file()) + " --report " + test::quoted(report));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(test::read_file(report).find("(pytorch_model.bin SHA-256 `" +
                                         sha256_file(converted("bert-mini") / "pytorch_model.bin") + "`)"),
            std::string::npos) << test::read_file(report);
}
