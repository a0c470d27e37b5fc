#include "model/torch_archive.h"

#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "model/error.h"
#include "model/vocab.h"

namespace lenscheck {

namespace {

// A state dict's pickle takes some 150 bytes a tensor (all-MiniLM-L6-v2's, as torch 1.13 saves it: 15.6 kB
// for 104 tensors), so 4 MiB is some 28 000 tensors, far more than any BERT has; it also bounds what the
// interpreter keeps, at most one object (under 100 bytes) per byte of pickle.
constexpr size_t kMaxPickleBytes = 4 << 20;

// The opcodes of pickle protocols 0 to 5 (CPython's Lib/pickletools.py), by byte: to name in errors.
const char* opcode_name(uint8_t op) {
  switch (op) {
    case '(': return "MARK";             case '.': return "STOP";           case '0': return "POP";
    case '1': return "POP_MARK";         case '2': return "DUP";            case 'F': return "FLOAT";
    case 'I': return "INT";              case 'J': return "BININT";         case 'K': return "BININT1";
    case 'L': return "LONG";             case 'M': return "BININT2";        case 'N': return "NONE";
    case 'P': return "PERSID";           case 'Q': return "BINPERSID";      case 'R': return "REDUCE";
    case 'S': return "STRING";           case 'T': return "BINSTRING";      case 'U': return "SHORT_BINSTRING";
    case 'V': return "UNICODE";          case 'X': return "BINUNICODE";     case 'a': return "APPEND";
    case 'b': return "BUILD";            case 'c': return "GLOBAL";         case 'd': return "DICT";
    case '}': return "EMPTY_DICT";       case 'e': return "APPENDS";        case 'g': return "GET";
    case 'h': return "BINGET";           case 'i': return "INST";           case 'j': return "LONG_BINGET";
    case 'l': return "LIST";             case ']': return "EMPTY_LIST";     case 'o': return "OBJ";
    case 'p': return "PUT";              case 'q': return "BINPUT";         case 'r': return "LONG_BINPUT";
    case 's': return "SETITEM";          case 't': return "TUPLE";          case ')': return "EMPTY_TUPLE";
    case 'u': return "SETITEMS";         case 'G': return "BINFLOAT";       case 'B': return "BINBYTES";
    case 'C': return "SHORT_BINBYTES";   case 0x80: return "PROTO";         case 0x81: return "NEWOBJ";
    case 0x82: return "EXT1";            case 0x83: return "EXT2";          case 0x84: return "EXT4";
    case 0x85: return "TUPLE1";          case 0x86: return "TUPLE2";        case 0x87: return "TUPLE3";
    case 0x88: return "NEWTRUE";         case 0x89: return "NEWFALSE";      case 0x8a: return "LONG1";
    case 0x8b: return "LONG4";           case 0x8c: return "SHORT_BINUNICODE"; case 0x8d: return "BINUNICODE8";
    case 0x8e: return "BINBYTES8";       case 0x8f: return "EMPTY_SET";     case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";       case 0x92: return "NEWOBJ_EX";     case 0x93: return "STACK_GLOBAL";
    case 0x94: return "MEMOIZE";         case 0x95: return "FRAME";         case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";     case 0x98: return "READONLY_BUFFER";
    default: return nullptr;
  }
}

// torch's typed storages, as torch.save names them (`torch.FloatStorage`).
struct StorageType {
  const char* name;
  DType dtype;
};
constexpr StorageType kStorageTypes[] = {
    {"DoubleStorage", DType::F64}, {"FloatStorage", DType::F32}, {"HalfStorage", DType::F16},
    {"BFloat16Storage", DType::BF16}, {"LongStorage", DType::I64}, {"IntStorage", DType::I32},
    {"ShortStorage", DType::I16}, {"CharStorage", DType::I8}, {"ByteStorage", DType::U8},
    {"BoolStorage", DType::BOOL}};

// What the pickle builds. The interpreter owns every object (an arena: no recursion, no reference cycles).
struct Object {
  enum class Kind { none, boolean, integer, string, tuple, dict, ordered_dict, callable, storage_type, storage, tensor };
  enum class Callable { ordered_dict, rebuild_tensor_v2 };
  Kind kind = Kind::none;
  Callable callable{};  // callable
  DType dtype{};        // storage_type, storage
  int64_t integer = 0;  // boolean, integer; a storage's element count; a tensor's storage offset
  std::string text;     // string; a storage's archive entry
  // tuple: its items; dict: keys and values alternately; tensor: its storage, shape and stride.
  std::vector<Object*> items;
  std::unique_ptr<std::set<std::string>> keys;  // dict: for the duplicate check
};

// "an int", "a tuple": how messages name what the pickle built.
const char* kind_name(Object::Kind kind) {
  switch (kind) {
    case Object::Kind::none: return "None";
    case Object::Kind::boolean: return "a bool";
    case Object::Kind::integer: return "an int";
    case Object::Kind::string: return "a str";
    case Object::Kind::tuple: return "a tuple";
    case Object::Kind::dict: return "a dict";
    case Object::Kind::ordered_dict: return "an OrderedDict";
    case Object::Kind::callable: return "a function";
    case Object::Kind::storage_type: return "a storage type";
    case Object::Kind::storage: return "a storage";
    case Object::Kind::tensor: return "a tensor";
  }
  return "?";
}

bool is_dict(const Object* o) { return o->kind == Object::Kind::dict || o->kind == Object::Kind::ordered_dict; }

// Text from the file, for a message: printable ASCII as it is, other bytes escaped, long text cut.
std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? std::string(1, char(c)) : fmt::format("\\x{:02x}", c);
  return s.size() > 80 ? out + "..." : out;
}

// A stack machine over data.pkl that knows the opcodes and globals a state dict needs (those
// torch.save writes) and refuses every other: it builds values, it never calls or imports anything.
class Unpickler {
 public:
  Unpickler(const ZipArchive& zip, const std::string& archive, std::span<const std::byte> pickle)
      : zip_(zip), archive_(archive), where_(archive + "/data.pkl"), pickle_(pickle) {}

  // The state dict: its tensors, in order.
  std::vector<TorchTensor> state_dict() {
    const Object* result = run();
    if (!is_dict(result))
      fail_at_end(fmt::format("holds {}, not a state dict (a dict of tensors)", kind_name(result->kind)));
    std::vector<TorchTensor> tensors;
    for (size_t i = 0; i < result->items.size(); i += 2) {
      const std::string& name = result->items[i]->text;
      const Object* t = result->items[i + 1];
      if (t->kind != Object::Kind::tensor)
        fail_at_end(fmt::format("state dict entry '{}' is {}, not a tensor", printable(name), kind_name(t->kind)));
      const Object* storage = t->items[0];
      tensors.push_back({name, storage->dtype, ints(t->items[1]), storage->text, static_cast<uint64_t>(t->integer),
                         ints(t->items[2])});
    }
    return tensors;
  }

 private:
  using Kind = Object::Kind;

  [[noreturn]] void fail(const std::string& problem) const {
    const uint8_t op = static_cast<uint8_t>(pickle_[op_at_]);
    const char* name = opcode_name(op);
    const std::string opcode = name ? name : fmt::format("byte {:#04x} (no pickle opcode)", op);
    throw InputError(zip_.path(), fmt::format("{}: {} at byte {}: {}", where_, opcode, op_at_, problem));
  }
  [[noreturn]] void fail_at_end(const std::string& problem) const {
    throw InputError(zip_.path(), where_ + " " + problem);
  }

  Object* make(Kind kind) {
    Object& o = objects_.emplace_back();
    o.kind = kind;
    return &o;
  }

  // Reading the opcodes' arguments.
  std::string_view take(size_t n) {
    if (n > pickle_.size() - at_) fail(fmt::format("its argument needs {} bytes, {} are left", n, pickle_.size() - at_));
    const auto* p = reinterpret_cast<const char*>(pickle_.data() + at_);
    at_ += n;
    return {p, n};
  }
  template <typename T>
  T little_endian() {
    T v;
    std::memcpy(&v, take(sizeof v).data(), sizeof v);
    return v;
  }
  std::string line() {
    const auto* begin = reinterpret_cast<const char*>(pickle_.data() + at_);
    const void* newline = std::memchr(begin, '\n', pickle_.size() - at_);
    if (!newline) fail("its argument has no end of line");
    const size_t n = static_cast<size_t>(static_cast<const char*>(newline) - begin);
    at_ += n + 1;
    return std::string(begin, n);
  }

  // The stack above the innermost MARK is what an opcode may take.
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Object* pop() {
    if (stack_.size() <= floor()) fail("the stack is empty");
    Object* o = stack_.back();
    stack_.pop_back();
    return o;
  }
  Object*& top() {
    if (stack_.size() <= floor()) fail("the stack is empty");
    return stack_.back();
  }
  std::vector<Object*> pop_mark() {
    if (marks_.empty()) fail("no MARK precedes it");
    std::vector<Object*> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  void push(Object* o) { stack_.push_back(o); }
  Object* tuple(std::vector<Object*> items) {
    Object* t = make(Kind::tuple);
    t->items = std::move(items);
    return t;
  }

  static std::vector<int64_t> ints(const Object* tuple) {
    std::vector<int64_t> out;
    for (const Object* o : tuple->items) out.push_back(o->integer);
    return out;
  }

  const Object* run();
  void global();
  void reduce();
  void build();
  void set_item(Object* dict, Object* key, Object* value);
  Object* persistent_storage(const Object* pid);
  Object* rebuild_tensor(const std::vector<Object*>& args);

  const ZipArchive& zip_;
  const std::string archive_, where_;
  std::span<const std::byte> pickle_;
  size_t at_ = 0, op_at_ = 0;
  std::deque<Object> objects_;
  std::vector<Object*> stack_;
  std::vector<size_t> marks_;
  std::map<uint32_t, Object*> memo_;
  std::map<std::string, Object*> storages_;  // by key: views of one storage share it
};

const Object* Unpickler::run() {
  while (at_ < pickle_.size()) {
    op_at_ = at_;
    const uint8_t op = static_cast<uint8_t>(pickle_[at_++]);
    switch (op) {
      case 0x80: {  // PROTO
        const uint8_t version = little_endian<uint8_t>();
        if (version > 5) fail(fmt::format("pickle protocol {} is newer than any Python writes (5)", version));
        break;
      }
      case '.': {  // STOP
        Object* result = pop();
        if (!stack_.empty() || !marks_.empty()) fail("it leaves values on the stack");
        if (at_ != pickle_.size()) fail(fmt::format("{} bytes follow it", pickle_.size() - at_));
        return result;
      }
      case 'c': global(); break;
      case 'R': reduce(); break;
      case 'b': build(); break;
      case 'Q': {  // BINPERSID
        const Object* pid = pop();
        push(persistent_storage(pid));
        break;
      }
      case '(': marks_.push_back(stack_.size()); break;
      case 't': push(tuple(pop_mark())); break;
      case ')': push(tuple({})); break;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
        std::vector<Object*> items(op - 0x84);
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        push(tuple(std::move(items)));
        break;
      }
      case '}': {
        Object* d = make(Kind::dict);
        d->keys = std::make_unique<std::set<std::string>>();
        push(d);
        break;
      }
      case 's': {  // SETITEM
        Object* value = pop();
        Object* key = pop();
        set_item(top(), key, value);
        break;
      }
      case 'u': {  // SETITEMS
        const std::vector<Object*> items = pop_mark();
        if (items.size() % 2 != 0) fail("it has a key without a value");
        Object* dict = top();
        for (size_t i = 0; i < items.size(); i += 2) set_item(dict, items[i], items[i + 1]);
        break;
      }
      case 'N': push(make(Kind::none)); break;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        Object* b = make(Kind::boolean);
        b->integer = op == 0x88;
        push(b);
        break;
      }
      case 'J':
      case 'K':
      case 'M':
      case 0x8a: {  // BININT, BININT1, BININT2, LONG1
        Object* i = make(Kind::integer);
        if (op == 'J') i->integer = little_endian<int32_t>();
        if (op == 'K') i->integer = little_endian<uint8_t>();
        if (op == 'M') i->integer = little_endian<uint16_t>();
        if (op == 0x8a) {
          const uint8_t n = little_endian<uint8_t>();
          if (n > 8) fail(fmt::format("an integer of {} bytes does not fit in 64 bits", n));
          uint64_t bits = 0;
          std::memcpy(&bits, take(n).data(), n);
          if (n > 0 && n < 8 && (bits >> (8 * n - 1)) & 1) bits |= ~uint64_t{0} << (8 * n);  // sign-extend
          i->integer = static_cast<int64_t>(bits);
        }
        push(i);
        break;
      }
      case 'X': {  // BINUNICODE
        Object* s = make(Kind::string);
        s->text = take(little_endian<uint32_t>());
        if (!valid_utf8(s->text)) fail("its string is not UTF-8");
        push(s);
        break;
      }
      case 'h':
      case 'j': {  // BINGET, LONG_BINGET
        const uint32_t slot = op == 'h' ? little_endian<uint8_t>() : little_endian<uint32_t>();
        auto it = memo_.find(slot);
        if (it == memo_.end()) fail(fmt::format("memo slot {} is empty", slot));
        push(it->second);
        break;
      }
      case 'q':
      case 'r': {  // BINPUT, LONG_BINPUT
        const uint32_t slot = op == 'q' ? little_endian<uint8_t>() : little_endian<uint32_t>();
        memo_[slot] = top();
        break;
      }
      default:
        fail("not allowed: only the opcodes a state dict needs are interpreted (GLOBAL, REDUCE, BUILD, "
             "BINPERSID and those of tuples, dicts, ints, strings and the memo)");
    }
  }
  fail_at_end("ends without STOP (truncated?)");
}

void Unpickler::global() {
  const std::string module = line(), name = line();
  Object* g = make(Kind::callable);
  if (module == "collections" && name == "OrderedDict") {
    g->callable = Object::Callable::ordered_dict;
  } else if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
    g->callable = Object::Callable::rebuild_tensor_v2;
  } else {
    g->kind = Kind::storage_type;
    bool known = false;
    for (const StorageType& s : kStorageTypes)
      if (module == "torch" && name == s.name) {
        g->dtype = s.dtype;
        known = true;
      }
    if (!known)
      fail(fmt::format("the global {}.{} is not allowed: a state dict needs only collections.OrderedDict, "
                       "torch._utils._rebuild_tensor_v2 and torch's typed storages (torch.FloatStorage, ...), and "
                       "nothing in data.pkl is run",
                       printable(module), printable(name)));
  }
  push(g);
}

void Unpickler::reduce() {
  const Object* args = pop();
  Object*& function = top();
  if (function->kind != Kind::callable) fail(fmt::format("it calls {}, not an allowed function", kind_name(function->kind)));
  if (args->kind != Kind::tuple) fail(fmt::format("its arguments are {}, not a tuple", kind_name(args->kind)));
  if (function->callable == Object::Callable::ordered_dict) {
    if (!args->items.empty()) fail("OrderedDict is called with arguments; torch.save calls it with none");
    function = make(Kind::ordered_dict);
    function->keys = std::make_unique<std::set<std::string>>();
  } else {
    function = rebuild_tensor(args->items);
  }
}

// OrderedDict.__reduce__ sets the instance's attributes by BUILD: a state dict's _metadata (the modules'
// versions), which the weights do not depend on.
void Unpickler::build() {
  const Object* state = pop();
  const Object* instance = top();
  if (instance->kind != Kind::ordered_dict || !is_dict(state))
    fail(fmt::format("it sets the state of {} to {}; only an OrderedDict's attributes (a dict) may be set",
                     kind_name(instance->kind), kind_name(state->kind)));
}

void Unpickler::set_item(Object* dict, Object* key, Object* value) {
  if (!is_dict(dict)) fail(fmt::format("it sets an item of {}, not of a dict", kind_name(dict->kind)));
  if (key->kind != Kind::string) fail(fmt::format("its key is {}; a state dict's keys are str", kind_name(key->kind)));
  if (!dict->keys->insert(key->text).second) fail(fmt::format("the key '{}' is set twice", printable(key->text)));
  dict->items.insert(dict->items.end(), {key, value});
}

// torch.save's persistent id of a storage: ('storage', torch.<T>Storage, key, location, element count),
// whose bytes are the archive's entry data/<key>.
Object* Unpickler::persistent_storage(const Object* pid) {
  const auto& f = pid->items;
  const bool well_formed = pid->kind == Kind::tuple && f.size() == 5 && f[0]->kind == Kind::string &&
                           f[0]->text == "storage" && f[1]->kind == Kind::storage_type &&
                           f[2]->kind == Kind::string && f[3]->kind == Kind::string &&
                           f[4]->kind == Kind::integer && f[4]->integer >= 0;
  if (!well_formed)
    fail("its persistent id is not ('storage', torch.<T>Storage, key, location, element count)");
  const std::string& key = f[2]->text;
  const DType dtype = f[1]->dtype;
  const int64_t numel = f[4]->integer;
  if (auto it = storages_.find(key); it != storages_.end()) {
    if (it->second->dtype != dtype || it->second->integer != numel)
      fail(fmt::format("storage '{}' is named again as {} {} elements, first as {} {}", printable(key), numel,
                       dtype_name(dtype), it->second->integer, dtype_name(it->second->dtype)));
    return it->second;
  }
  const std::string entry = archive_ + "/data/" + key;
  const ZipEntry* bytes = zip_.find(entry);
  if (!bytes) fail(fmt::format("storage '{}' has no entry {} in the archive", printable(key), printable(entry)));
  uint64_t size = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel), dtype_size(dtype), &size) || size != bytes->size)
    fail(fmt::format("storage '{}' of {} {} elements needs {} bytes, its entry holds {}", printable(key), numel,
                     dtype_name(dtype), numel * dtype_size(dtype), bytes->size));
  Object* s = make(Kind::storage);
  s->dtype = dtype;
  s->integer = numel;
  s->text = entry;
  storages_.emplace(key, s);
  return s;
}

// torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks
// [, metadata]): a view of the storage, which must lie inside it.
Object* Unpickler::rebuild_tensor(const std::vector<Object*>& args) {
  auto int_tuple = [](const Object* o) {
    if (o->kind != Kind::tuple) return false;
    for (const Object* i : o->items)
      if (i->kind != Kind::integer || i->integer < 0) return false;
    return true;
  };
  auto empty_dict = [](const Object* o) { return is_dict(o) && o->items.empty(); };
  const bool well_formed = (args.size() == 6 || (args.size() == 7 && empty_dict(args[6]))) &&
                           args[0]->kind == Kind::storage && args[1]->kind == Kind::integer &&
                           args[1]->integer >= 0 && int_tuple(args[2]) && int_tuple(args[3]) &&
                           args[2]->items.size() == args[3]->items.size() && args[4]->kind == Kind::boolean &&
                           empty_dict(args[5]);
  if (!well_formed)
    fail("_rebuild_tensor_v2's arguments are not (storage, offset, size, stride, requires_grad, no backward "
         "hooks), with non-negative integers and as many strides as sizes");
  const Object* storage = args[0];
  const uint64_t offset = static_cast<uint64_t>(args[1]->integer);
  // The last element the view reaches: offset + sum of (size - 1) * stride, if it has any element.
  uint64_t last = offset, numel = 1;
  bool overflow = false;
  for (size_t d = 0; d < args[2]->items.size(); ++d) {
    const uint64_t size = static_cast<uint64_t>(args[2]->items[d]->integer);
    const uint64_t stride = static_cast<uint64_t>(args[3]->items[d]->integer);
    uint64_t reach = 0;
    overflow |= __builtin_mul_overflow(numel, size, &numel);
    if (size > 0) overflow |= __builtin_mul_overflow(size - 1, stride, &reach) || __builtin_add_overflow(last, reach, &last);
  }
  const uint64_t elements = static_cast<uint64_t>(storage->integer);
  if (overflow || (numel > 0 ? last >= elements : offset > elements))
    fail(fmt::format("a view (offset {}, size {}, stride {}) reaches past its storage {} of {} elements", offset,
                     shape_string(ints(args[2])), shape_string(ints(args[3])), printable(storage->text), elements));
  Object* t = make(Kind::tensor);
  t->integer = args[1]->integer;
  t->items = {args[0], args[2], args[3]};
  return t;
}

// The legacy format is a bare pickle stream: it starts with PROTO (0x80), where a zip archive has "PK".
bool is_legacy_format(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return in && in.get() == 0x80;
}

}  // namespace

uint64_t TorchTensor::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

TorchArchive TorchArchive::open(const std::filesystem::path& file) {
  if (is_legacy_format(file))
    throw InputError(file, "is in PyTorch's legacy format (torch.save before PyTorch 1.6, or with "
                           "_use_new_zipfile_serialization=False), a bare pickle stream lenscheck does not read; "
                           "convert it to a zip archive with PyTorch 1.13 or later: python3 -c \"import torch; "
                           "torch.save(torch.load('pytorch_model.bin', weights_only=True), 'pytorch_model.bin')\"");
  TorchArchive t;
  t.zip_ = ZipArchive::open(file);
  // torch.save puts every entry in one folder, named after the file (PyTorch 1.x) or "archive" (2.x).
  const std::string first = t.zip_.entries().empty() ? std::string() : t.zip_.entries().front().name;
  const std::string archive = first.substr(0, first.find('/'));
  const ZipEntry* pickle = t.zip_.find(archive + "/data.pkl");
  if (first.find('/') == std::string::npos || !pickle)
    throw InputError(file, "is a zip archive but not torch.save's: it has no <archive>/data.pkl");
  if (const ZipEntry* order = t.zip_.find(archive + "/byteorder")) {
    const auto bytes = t.zip_.data(*order);
    if (std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()) != "little")
      throw InputError(file, archive + "/byteorder: the tensors are not little-endian; lenscheck reads little-endian "
                                       "archives only");
  }
  if (pickle->size > kMaxPickleBytes)
    throw InputError(file, fmt::format("{}/data.pkl holds {} bytes, above the {} a state dict needs", archive,
                                       pickle->size, kMaxPickleBytes));
  t.entries_ = Unpickler(t.zip_, archive, t.zip_.data(*pickle)).state_dict();
  for (size_t i = 0; i < t.entries_.size(); ++i) t.index_.emplace(t.entries_[i].name, i);
  return t;
}

const TorchTensor* TorchArchive::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

std::vector<float> TorchArchive::read_f32(const TorchTensor& tensor) const {
  if (entries_.empty() || &tensor < entries_.data() || &tensor >= entries_.data() + entries_.size())
    throw std::out_of_range("tensor '" + tensor.name + "' does not belong to " + path().string());
  if (!is_floating(tensor.dtype))
    throw InputError(path(), fmt::format("tensor '{}' has integer dtype {}, expected a floating dtype", tensor.name,
                                         dtype_name(tensor.dtype)));
  const std::byte* storage = zip_.data(*zip_.find(tensor.storage)).data();
  const size_t step = dtype_size(tensor.dtype), rank = tensor.shape.size();
  std::vector<float> out(tensor.numel());
  // An odometer over the index, row-major; open() checked that the view lies inside the storage.
  std::vector<int64_t> index(rank, 0);
  uint64_t at = tensor.storage_offset;
  for (float& value : out) {
    value = static_cast<float>(floating_element(tensor.dtype, storage + at * step));
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < tensor.shape[d]) {
        at += static_cast<uint64_t>(tensor.stride[d]);
        break;
      }
      at -= static_cast<uint64_t>((tensor.shape[d] - 1) * tensor.stride[d]);
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace lenscheck
