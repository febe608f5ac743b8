//! `device::open`: every device from one description, and a device this build left out is
//! `OpenError::NotBuilt`, for opening, asking its rate and listing alike.

use downbeat::device::{open, DeviceKind, DeviceSpec};

#[test]
fn the_built_in_devices_open_under_their_own_names() {
    for kind in [DeviceKind::Virtual, DeviceKind::Offline] {
        assert!(kind.is_built());
        let device = open(&DeviceSpec::new(kind)).unwrap();
        assert_eq!(device.name(), kind.name());
        // They run at the project's rate and take as many input channels as it reads.
        let spec = DeviceSpec::new(kind);
        assert_eq!(spec.sample_rate(44_100, true).unwrap(), 44_100);
        assert_eq!(spec.input_channels().unwrap(), None);
    }
}

/// `kind`, which this build lacks, is refused as not built by every way of reaching it, with
/// a message naming its feature.
#[cfg(any(not(feature = "jack"), not(feature = "system")))]
fn refused_as_not_built(kind: DeviceKind) {
    use downbeat::device::{devices, jack_rate, OpenError};
    assert!(!kind.is_built());
    let spec = DeviceSpec::new(kind);
    let errors = [
        open(&spec).err(),
        spec.sample_rate(48_000, false).err(),
        match kind {
            DeviceKind::System => devices().err(),
            _ => jack_rate("downbeat").err(),
        },
    ];
    for e in errors {
        let e = e.expect("a device this build lacks is refused");
        assert!(matches!(e, OpenError::NotBuilt(k) if k == kind), "{e:?}");
        let message = e.to_string();
        assert!(
            message.contains(&format!("rebuild with the `{}` feature", kind.name())),
            "{message}"
        );
    }
}

#[test]
#[cfg(not(feature = "jack"))]
fn jack_without_its_feature_is_not_built() {
    refused_as_not_built(DeviceKind::Jack);
}

#[test]
#[cfg(not(feature = "system"))]
fn system_without_its_feature_is_not_built() {
    refused_as_not_built(DeviceKind::System);
    assert!(matches!(
        DeviceSpec::new(DeviceKind::System).input_channels(),
        Err(downbeat::device::OpenError::NotBuilt(DeviceKind::System))
    ));
}
