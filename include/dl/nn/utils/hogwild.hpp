// dl/nn/utils/hogwild.hpp — dl::nn::utils::share_parameters: a replica module whose parameters and
// buffers are the master's memory, with gradients of its own, for Hogwild training (several threads
// train one model without locks; PyTorch's model.share_memory() and one process per worker).
#pragma once

#include <algorithm>
#include <concepts>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../../any_tensor.hpp"
#include "../../autograd/graph.hpp"
#include "../../error.hpp"
#include "../../storage.hpp"
#include "../../tensor_impl.hpp"
#include "../module.hpp"

namespace dl::nn::utils {

// ------------------------------------------------------------------------------ declarations

/// Makes every parameter and buffer of `replica` use the memory of the same-named one of `master`:
/// a step of an optimizer over replica.parameters() changes the master's values (and every other
/// replica's), while backward through the replica accumulates into gradients of its own (the
/// master's and the other replicas' .grad are untouched). This is PyTorch's Hogwild: there,
/// model.share_memory() puts the parameters in shared memory and each worker process has its own
/// autograd state; here each worker thread has its own replica.
///
///   Net master;
///   std::vector<std::thread> workers;
///   for (int rank = 0; rank < 4; ++rank)
///     workers.emplace_back([&master, rank] {
///       dl::set_num_threads_in_this_thread(1);       // the workers are the parallelism
///       Net replica = master;                         // or a Net built with the same arguments
///       dl::nn::utils::share_parameters(replica, master);
///       dl::optim::SGD opt(replica.parameters(), {.lr = 0.01});
///       for (auto& [x, y] : loader_of(rank)) {        // a shard of the data per worker
///         auto loss = criterion(replica(x), y);
///         opt.zero_grad();  loss.backward();  opt.step();   // no lock: writes the master's memory
///       }
///     });
///   for (auto& w : workers) w.join();                 // master holds the trained values
///
/// Each replica tensor also has its own version counter (as each of PyTorch's processes has): a
/// step by another worker between this replica's forward and backward is Hogwild's intended stale
/// read, not the "modified by an inplace operation" error, which still guards the replica's own
/// in-place changes. Reads and writes of the shared values race by design (a ThreadSanitizer build
/// reports them). Calling to(device) on the replica afterwards gives it memory of its own again.
///
/// @pre `replica` and `master` have the same structure: the same parameter and buffer names, in
///      the same order, with the same element types and shapes, and no submodule in common.
/// @post the replica's parameters are leaves with the master's requires_grad and no gradient;
///       parameters tied in the master (one tensor under two names) are tied in the replica.
/// @throws dl::Error naming the first parameter or buffer that differs, or the submodule the two
///         share (a copy of a module shares its std::shared_ptr, AnyModule and run-time registered
///         children: build such a replica anew); the replica is then left as it was.
template <class M>
  requires std::derived_from<M, Module>
void share_parameters(M& replica, M& master);

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// A parameter or buffer of a module tree, by its qualified name ("fc1.weight").
struct NamedSlot {
  std::string name;
  bool parameter;
  nn::detail::TensorSlot slot;
};

/// Every module of the tree (qualified names; each module once) and every parameter and buffer, in
/// state_dict's order: a module's parameters, its buffers, then its children's.
inline void collect_slots(Module& root, std::vector<std::pair<std::string, Module*>>& modules, std::vector<NamedSlot>& slots) {
  std::unordered_set<const Module*> seen;
  std::function<void(const std::string&, Module&)> go = [&](const std::string& path, Module& m) {
    if (!seen.insert(&m).second) return;
    modules.emplace_back(path, &m);
    const std::string prefix = path.empty() ? path : path + ".";
    std::vector<std::pair<std::string, Module*>> kids;
    nn::detail::FnVisitor v([&](const std::string& n, const nn::detail::TensorSlot& s) { slots.push_back({prefix + n, true, s}); },
                            [&](const std::string& n, const nn::detail::TensorSlot& s) { slots.push_back({prefix + n, false, s}); },
                            [&](const std::string& n, Module& c) { kids.emplace_back(n, &c); });
    m.visit_members(v);
    for (auto& [n, c] : kids) go(prefix + n, *c);
  };
  go("", root);
}

/// Checks that the two trees match (names, kinds, element types, shapes; no module in common)
/// before anything is replaced, so that a mismatch leaves the replica as it was.
inline void check_replica(const std::vector<std::pair<std::string, Module*>>& replica_modules,
                   const std::vector<std::pair<std::string, Module*>>& master_modules, const std::vector<NamedSlot>& replica,
                   const std::vector<NamedSlot>& master) {
  std::unordered_set<const Module*> master_set;
  for (const auto& [path, m] : master_modules) master_set.insert(m);
  for (const auto& [path, m] : replica_modules) {
    DL_CHECK(!path.empty() || !master_set.count(m), "share_parameters: the replica is the master itself; build a replica "
             "(a copy of the master, or a module built with its constructor arguments)");
    DL_CHECK(!master_set.count(m), "share_parameters: the replica and the master share the submodule '", path,
             "' (copying a module shares its std::shared_ptr, AnyModule and run-time registered children); build the "
             "replica as a module of its own, with the master's constructor arguments");
  }
  auto kind = [](const NamedSlot& s) { return s.parameter ? "parameter" : "buffer"; };
  const size_t n = std::min(replica.size(), master.size());
  for (size_t i = 0; i < n; ++i) {
    const NamedSlot &r = replica[i], &m = master[i];
    DL_CHECK(r.name == m.name && r.parameter == m.parameter, "share_parameters: the replica has ", kind(r), " '", r.name,
             "' where the master has ", kind(m), " '", m.name, "'; the two modules must have the same structure");
    const AnyTensor rt = r.slot.get(), mt = m.slot.get();
    DL_CHECK(rt.dtype() == mt.dtype(), "share_parameters: ", kind(r), " '", r.name, "' is ", dtype_name(rt.dtype()),
             " in the replica but ", dtype_name(mt.dtype()), " in the master");
    DL_CHECK(rt.shape() == mt.shape(), "share_parameters: ", kind(r), " '", r.name, "' has shape ", rt.shape(),
             " in the replica but ", mt.shape(), " in the master");
  }
  DL_CHECK(replica.size() <= n, "share_parameters: the replica has ", kind(replica[n]), " '", replica[n].name,
           "' that the master lacks");
  DL_CHECK(master.size() <= n, "share_parameters: the master has ", kind(master[n]), " '", master[n].name,
           "' that the replica lacks");
}

}  // namespace detail

template <class M>
  requires std::derived_from<M, Module>
void share_parameters(M& replica, M& master) {
  std::vector<std::pair<std::string, Module*>> replica_modules, master_modules;
  std::vector<detail::NamedSlot> replica_slots, master_slots;
  detail::collect_slots(replica, replica_modules, replica_slots);
  detail::collect_slots(master, master_modules, master_slots);
  detail::check_replica(replica_modules, master_modules, replica_slots, master_slots);

  // One Storage of the replica's own per Storage of the master: the same memory (kept alive by the
  // deleter), a version counter of its own. Tensors that are views of one master storage stay views
  // of one replica storage, and a tensor under two names stays one tensor.
  std::unordered_map<const Storage*, std::shared_ptr<Storage>> storages;
  std::unordered_map<const TensorImpl*, AnyTensor> shared;
  for (size_t i = 0; i < master_slots.size(); ++i) {
    const AnyTensor src = master_slots[i].slot.get();
    const TensorImpl& from = *src.impl();
    auto it = shared.find(&from);
    if (it == shared.end()) {
      std::shared_ptr<Storage>& storage = storages[from.storage.get()];
      if (!storage) {
        std::shared_ptr<Storage> owner = from.storage;
        storage = Storage::wrap(owner->data(), owner->nbytes(), owner->device(), [owner](void*) mutable { owner.reset(); });
      }
      auto impl = std::make_shared<TensorImpl>();
      impl->storage = storage;
      impl->shape = from.shape;
      impl->strides = from.strides;
      impl->offset = from.offset;
      impl->dtype = from.dtype;
      if (master_slots[i].parameter && from.autograd && from.autograd->requires_grad)
        autograd::detail::meta(impl).requires_grad = true;
      it = shared.emplace(&from, AnyTensor(std::move(impl))).first;
    }
    replica_slots[i].slot.set(it->second);
  }
}

}  // namespace dl::nn::utils
