//! cpu.compiler: a real compiler backend at work. Generated functions (a loop over a
//! chain of integer operations on the arguments, the loop counter and constants) are
//! built as Cranelift IR, optimised and compiled to machine code by cranelift-jit, then
//! called: each must return what an interpreter of the same generated program computes.

use super::Task;
use crate::workload::{failed, WorkloadError};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, Value};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

pub struct Compiler;

const FUNCTIONS: usize = 60;
const PER_MODULE: usize = 5; // functions per JIT module: one part of the shared-task mode

#[derive(Clone, Copy)]
enum Operand {
    B,
    Counter,
    Constant(i64),
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Xor,
    And,
    RotateLeft(u8),
}

pub struct Program {
    steps: Vec<(Op, Operand)>,
    trips: i64,
}

impl Program {
    fn interpret(&self, a: i64, b: i64) -> i64 {
        let mut acc = a;
        for i in 0..self.trips {
            for (op, operand) in &self.steps {
                let v = match operand {
                    Operand::B => b,
                    Operand::Counter => i,
                    Operand::Constant(c) => *c,
                };
                acc = match op {
                    Op::Add => acc.wrapping_add(v),
                    Op::Sub => acc.wrapping_sub(v),
                    Op::Mul => acc.wrapping_mul(v | 1),
                    Op::Xor => acc ^ v,
                    Op::And => acc & (v | 0xff),
                    Op::RotateLeft(k) => acc.rotate_left(*k as u32) ^ v,
                };
            }
        }
        acc
    }

    /// The same program as Cranelift IR: entry -> header(acc, i) -> body -> header | exit.
    fn build(&self, mut builder: FunctionBuilder) {
        let entry = builder.create_block();
        let header = builder.create_block();
        let body = builder.create_block();
        let exit = builder.create_block();
        builder.append_block_params_for_function_params(entry);
        builder.append_block_param(header, types::I64);
        builder.append_block_param(header, types::I64);
        builder.append_block_param(exit, types::I64);
        builder.switch_to_block(entry);
        let (a, b) = (
            builder.block_params(entry)[0],
            builder.block_params(entry)[1],
        );
        let zero = builder.ins().iconst(types::I64, 0);
        builder.ins().jump(header, &[a.into(), zero.into()]);
        builder.switch_to_block(header);
        let (acc, i) = (
            builder.block_params(header)[0],
            builder.block_params(header)[1],
        );
        let more = builder.ins().icmp_imm(IntCC::SignedLessThan, i, self.trips);
        builder.ins().brif(more, body, &[], exit, &[acc.into()]);
        builder.switch_to_block(body);
        let mut acc = acc;
        for (op, operand) in &self.steps {
            let v: Value = match operand {
                Operand::B => b,
                Operand::Counter => i,
                Operand::Constant(c) => builder.ins().iconst(types::I64, *c),
            };
            acc = match op {
                Op::Add => builder.ins().iadd(acc, v),
                Op::Sub => builder.ins().isub(acc, v),
                Op::Mul => {
                    let odd = builder.ins().bor_imm(v, 1);
                    builder.ins().imul(acc, odd)
                }
                Op::Xor => builder.ins().bxor(acc, v),
                Op::And => {
                    let mask = builder.ins().bor_imm(v, 0xff);
                    builder.ins().band(acc, mask)
                }
                Op::RotateLeft(k) => {
                    let r = builder.ins().rotl_imm(acc, *k as i64);
                    builder.ins().bxor(r, v)
                }
            };
        }
        let next = builder.ins().iadd_imm(i, 1);
        builder.ins().jump(header, &[acc.into(), next.into()]);
        builder.switch_to_block(exit);
        let result = builder.block_params(exit)[0];
        builder.ins().return_(&[result]);
        builder.seal_all_blocks();
        builder.finalize();
    }
}

fn generate(rng: &mut Pcg64) -> Program {
    let steps = (0..rng.random_range(20..80))
        .map(|_| {
            let op = match rng.random_range(0..6) {
                0 => Op::Add,
                1 => Op::Sub,
                2 => Op::Mul,
                3 => Op::Xor,
                4 => Op::And,
                _ => Op::RotateLeft(rng.random_range(1..63)),
            };
            let operand = match rng.random_range(0..3) {
                0 => Operand::B,
                1 => Operand::Counter,
                _ => Operand::Constant(rng.random()),
            };
            (op, operand)
        })
        .collect();
    Program {
        steps,
        trips: rng.random_range(1..50),
    }
}

fn jit() -> Result<JITModule, WorkloadError> {
    let mut flags = settings::builder();
    flags
        .set("opt_level", "speed")
        .map_err(|e| failed!("{e}"))?;
    let isa = cranelift_native::builder()
        .map_err(|e| failed!("cranelift: {e}"))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| failed!("cranelift: {e}"))?;
    Ok(JITModule::new(JITBuilder::with_isa(
        isa,
        default_libcall_names(),
    )))
}

impl Task for Compiler {
    type Input = Vec<Program>;
    type Scratch = ();
    const NAME: &'static str = "cpu.compiler";
    const SECTION: &'static str = "integer";
    const DESCRIPTION: &'static str = "Cranelift compiles 60 generated loop functions (12 modules of 5) to machine code, which must agree with an interpreter (work: functions)";
    const VERSION: u32 = 3;
    const ITERATIONS: u64 = 8;
    const WORK_UNIT: &'static str = "functions";
    const PARTS: usize = FUNCTIONS / PER_MODULE;

    fn prepare(&self, seed: u64) -> Vec<Program> {
        let mut rng = Pcg64::seed_from_u64(seed);
        (0..FUNCTIONS).map(|_| generate(&mut rng)).collect()
    }

    fn scratch(&self, _input: &Vec<Program>) {}

    fn work(&self, input: &Vec<Program>) -> f64 {
        input.len() as f64
    }

    fn part(
        &self,
        programs: &Vec<Program>,
        _: &mut (),
        index: usize,
    ) -> Result<u64, WorkloadError> {
        let programs = &programs[index * PER_MODULE..(index + 1) * PER_MODULE];
        let got = compile_and_call(programs)?;
        check(programs, &got)
    }
}

/// The arguments each compiled function is called with: small and mixed values, and
/// pairs whose `b` is all ones or has high bits set, so that the And masks made from `b`
/// keep the bits of the accumulator (and with them its dependence on `a`) and a
/// miscompiled instruction before them still shows.
const ARGUMENTS: [(i64, i64); 8] = [
    (1, 2),
    (-7, 1 << 40),
    (123_456_789, -987_654_321),
    (-1, -1),
    (0x5555_5555_5555_5555, -1),
    (0x0123_4567_89ab_cdef, -0x0f0f_0f0f_0f0f_0f10),
    (i64::MIN + 0x3c3c, 0x7fff_ffff_ffff_ff00),
    (-0x7654_3210_fedc_ba99, -2),
];
const CALLS: usize = ARGUMENTS.len();

/// Compiles the programs into one JIT module and calls each on ARGUMENTS: what the machine
/// code returned.
fn compile_and_call(programs: &[Program]) -> Result<Vec<[i64; CALLS]>, WorkloadError> {
    let mut module = jit()?;
    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut ids = Vec::with_capacity(programs.len());
    for (n, program) in programs.iter().enumerate() {
        ctx.func.signature.params = vec![AbiParam::new(types::I64), AbiParam::new(types::I64)];
        ctx.func.signature.returns = vec![AbiParam::new(types::I64)];
        program.build(FunctionBuilder::new(&mut ctx.func, &mut fctx));
        let id = module
            .declare_function(&format!("f{n}"), Linkage::Local, &ctx.func.signature)
            .map_err(|e| failed!("cranelift: {e}"))?;
        module
            .define_function(id, &mut ctx)
            .map_err(|e| failed!("cranelift: {e}"))?;
        module.clear_context(&mut ctx);
        ids.push(id);
    }
    module
        .finalize_definitions()
        .map_err(|e| failed!("cranelift: {e}"))?;
    let got = ids
        .into_iter()
        .map(|id| {
            // SAFETY: the function was compiled just above with exactly this signature.
            let f: extern "C" fn(i64, i64) -> i64 =
                unsafe { std::mem::transmute(module.get_finalized_function(id)) };
            ARGUMENTS.map(|(a, b)| f(a, b))
        })
        .collect();
    // SAFETY: no pointer into the module's code outlives this function.
    unsafe { module.free_memory() };
    Ok(got)
}

/// Each compiled function must return what the interpreter computes; returns a checksum of
/// the results.
fn check(programs: &[Program], got: &[[i64; CALLS]]) -> Result<u64, WorkloadError> {
    if got.len() != programs.len() {
        return Err(failed!(
            "{} functions ran, {} were compiled",
            got.len(),
            programs.len()
        ));
    }
    let mut checksum = 0u64;
    for (program, results) in programs.iter().zip(got) {
        for (&(a, b), &got) in ARGUMENTS.iter().zip(results) {
            let want = program.interpret(a, b);
            if got != want {
                return Err(failed!(
                    "compiled code returned {got}, the program computes {want}"
                ));
            }
            checksum = checksum.rotate_left(7) ^ got as u64;
        }
    }
    Ok(checksum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_passes_and_a_wrong_result_of_compiled_code_is_caught() {
        let programs = Compiler.prepare(1);
        let sum = Compiler.round(&programs, &mut ()).unwrap();
        assert_ne!(Compiler.round(&Compiler.prepare(2), &mut ()), Ok(sum));
        let module = &programs[..PER_MODULE];
        let mut got = compile_and_call(module).unwrap();
        assert_eq!(check(module, &got), Compiler.part(&programs, &mut (), 0));
        // one result with a bit flipped
        got[2][1] ^= 1 << 17;
        assert!(check(module, &got)
            .unwrap_err()
            .to_string()
            .contains("compiled code"));
        // one function miscompiled: its last add emitted as a subtract
        let mut wrong: Vec<Program> = module
            .iter()
            .map(|p| Program {
                steps: p.steps.clone(),
                trips: p.trips,
            })
            .collect();
        let step = wrong[3]
            .steps
            .iter_mut()
            .rfind(|(op, _)| matches!(op, Op::Add))
            .unwrap();
        step.0 = Op::Sub;
        let got = compile_and_call(&wrong).unwrap();
        assert!(check(module, &got)
            .unwrap_err()
            .to_string()
            .contains("compiled code"));
        // the last function's results missing
        let got = compile_and_call(&module[..4]).unwrap();
        assert!(check(module, &got)
            .unwrap_err()
            .to_string()
            .contains("functions ran"));
    }

    /// Every single-instruction change of a program (its op replaced by the next kind):
    /// how many of them leave the results on `arguments` unchanged, of how many.
    fn unnoticed(programs: &[Program], arguments: &[(i64, i64)]) -> (usize, usize) {
        let (mut quiet, mut all) = (0, 0);
        for p in programs {
            let want: Vec<i64> = arguments.iter().map(|&(a, b)| p.interpret(a, b)).collect();
            for s in 0..p.steps.len() {
                let mut steps = p.steps.clone();
                steps[s].0 = match steps[s].0 {
                    Op::Add => Op::Sub,
                    Op::Sub => Op::Mul,
                    Op::Mul => Op::Xor,
                    Op::Xor => Op::And,
                    Op::And => Op::RotateLeft(13),
                    Op::RotateLeft(_) => Op::Add,
                };
                let q = Program {
                    steps,
                    trips: p.trips,
                };
                all += 1;
                if arguments
                    .iter()
                    .zip(&want)
                    .all(|(&(a, b), w)| q.interpret(a, b) == *w)
                {
                    quiet += 1;
                }
            }
        }
        (quiet, all)
    }

    /// The arguments notice more single-instruction miscompilations than the three pairs the
    /// task called its functions with before (whose And masks dropped the bits of `a`).
    #[test]
    fn the_arguments_notice_more_miscompilations() {
        let programs: Vec<Program> = (1..=3).flat_map(|seed| Compiler.prepare(seed)).collect();
        let old = [(1, 2), (-7, 1 << 40), (123_456_789, -987_654_321)];
        let (before, all) = unnoticed(&programs, &old);
        let (now, _) = unnoticed(&programs, &ARGUMENTS);
        assert!(
            now * 100 < before * 90,
            "{now} of {all} unnoticed, {before} before"
        );
    }
}
